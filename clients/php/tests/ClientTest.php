<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;
use Pristine\Client;
use Pristine\ContentKey;
use Pristine\NoDaemonException;
use Pristine\Pristine;
use Pristine\PristineException;
use Pristine\TemplateBuildException;

final class ClientTest extends TestCase
{
    private static Daemon $d;

    public static function setUpBeforeClass(): void
    {
        self::$d = Daemon::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$d->stop();
    }

    private static function canary(array $conn): void
    {
        Pristine::runCommand(Daemon::sqlClient() . ' -u"$MYSQL_USER" "$MYSQL_DATABASE" -e "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, \'pristine\')"', $conn);
    }

    /** testdata/contentkey/vectors.json, which every client's tests check. */
    public function testContentKeySharedVectors(): void
    {
        $file = dirname(__DIR__, 3) . '/testdata/contentkey/vectors.json';
        $vectors = json_decode((string) file_get_contents($file), true)['vectors'];
        $this->assertNotEmpty($vectors);
        $tmp = sys_get_temp_dir() . '/pristine-vectors-' . getmypid();
        foreach ($vectors as $i => $v) {
            $dir = "$tmp/$i";
            @mkdir($dir, 0o755, true);
            foreach ($v['files'] as $name => $text) {
                @mkdir(dirname("$dir/$name"), 0o755, true);
                file_put_contents("$dir/$name", $text);
            }
            $patterns = array_map(fn ($p) => "$dir/$p", $v['patterns']);
            $this->assertSame($v['key'], ContentKey::of($patterns, $v['extra']), $v['name']);
        }
        exec('rm -rf ' . escapeshellarg($tmp));
    }

    public function testContentKeyMatchesTheGoClient(): void
    {
        $dir = sys_get_temp_dir() . '/pristine-key-' . getmypid();
        @mkdir("$dir/m/sub", 0o755, true);
        file_put_contents("$dir/m/001.sql", 'CREATE TABLE a (id INT);');
        file_put_contents("$dir/m/sub/002.sql", 'CREATE TABLE b (id INT);');
        // The same files and extra string through client.ContentKey in Go.
        $this->assertSame('469c6fadcf0cdddd236881f69b788abcb1752e48af4ddca5907462d3e676630d', ContentKey::of(["$dir/m"], ['v1']));
        $before = ContentKey::of(["$dir/m"]);
        file_put_contents("$dir/m/sub/002.sql", 'CREATE TABLE b (id BIGINT);');
        $this->assertNotSame($before, ContentKey::of(["$dir/m"]));
        exec('rm -rf ' . escapeshellarg($dir));
        $this->expectException(\InvalidArgumentException::class);
        ContentKey::of(["$dir/nope"]);
    }

    public function testBuildOnceLeaseAndReleaseOverSocketAndTcp(): void
    {
        $c = self::$d->client;
        $tcp = Client::tcp(self::$d->addr, self::$d->token);
        try {
            Client::tcp(self::$d->addr, 'wrong')->health();
            $this->fail('a wrong token was accepted');
        } catch (PristineException $e) {
            $this->assertSame(401, $e->status);
        }
        $builds = 0;
        $t = Pristine::ensureTemplate($c, 'phponce', 'key-once', function (array $conn) use (&$builds) {
            $builds++;
            self::canary($conn);
        });
        $again = Pristine::ensureTemplate($tcp, 'phponce', 'key-once', function () use (&$builds) {
            $builds++;
        });
        $this->assertSame(1, $builds);
        $this->assertSame($t['hash'], $again['hash']);
        Pristine::ensurePool($tcp, 'phponce', $t['hash'], 1);
        $l = $tcp->lease('phponce');
        $this->assertSame(getmypid(), $l->pid);
        $db = $l->pdo();
        $this->assertSame('pristine', $db->query('SELECT v FROM canary')->fetchColumn());
        $db->exec("UPDATE canary SET v = 'dirty'");
        $db = null;
        $tcp->release($l->id, true); // the daemon sees the write and resets it
        $l2 = $c->lease('phponce', wait: 30);
        $this->assertSame('pristine', $l2->pdo()->query('SELECT v FROM canary')->fetchColumn());
        $c->release($l2->id);
        $c->poolDown('phponce');
    }

    /**
     * No silent stale templates: a build no file keys is refused before it
     * runs; keyed by its migrations, a changed migration gets a new template.
     */
    public function testABuildNoFileKeysIsRefusedAndAChangedMigrationGetsANewTemplate(): void
    {
        $c = self::$d->client;
        $dir = sys_get_temp_dir() . '/pristine-php-stale-' . getmypid();
        @mkdir($dir);
        file_put_contents("$dir/001.sql", 'one');
        $runs = 0;
        $build = function (array $conn) use (&$runs) {
            $runs++;
            self::canary($conn);
        };
        try {
            Pristine::ensureTemplate($c, 'phpstale', ContentKey::of([], ['php artisan migrate']), $build, keyFiles: 0);
            $this->fail('a build no file keys was accepted');
        } catch (PristineException $e) {
            $this->assertSame([400, PristineException::UNKEYED_BUILD, 0], [$e->status, $e->errorCode, $runs]);
        }
        $first = Pristine::ensureTemplate($c, 'phpstale', ContentKey::of([$dir]), $build, keyFiles: 1);
        file_put_contents("$dir/001.sql", 'two');
        $second = Pristine::ensureTemplate($c, 'phpstale', ContentKey::of([$dir]), $build, keyFiles: 1);
        $this->assertSame(2, $runs);
        $this->assertNotSame($first['hash'], $second['hash']);
        unlink("$dir/001.sql");
        rmdir($dir);
    }

    /**
     * A lease's account is reachable over TCP (no TLS on a loopback slot)
     * and over the slot's socket; on MySQL it is a caching_sha2_password
     * account, whose first login over plain TCP needs the server's RSA key
     * (mysqlnd asks the server for it).
     */
    public function testLeaseConnectsOverTcpAndTheSocket(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phpconn', 'key-conn', fn (array $conn) => self::canary($conn));
        Pristine::ensurePool($c, 'phpconn', $t['hash'], 1);
        $l = $c->lease('phpconn');
        try {
            $tcp = $l->pdo();
            $this->assertSame('', (string) $tcp->query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")->fetch(\PDO::FETCH_NUM)[1], 'a loopback lease without TLS');
            $this->assertSame('pristine', $tcp->query('SELECT v FROM canary')->fetchColumn());
            $version = (string) $tcp->query('SELECT VERSION()')->fetchColumn();
            $create = (string) $tcp->query('SHOW CREATE USER CURRENT_USER()')->fetchColumn();
            if (!str_contains(strtolower($version), 'mariadb')) {
                $this->assertStringContainsString('caching_sha2_password', $create, "the lease's account on MySQL $version");
            }
            $this->assertNotSame('', $l->socket);
            $sock = new \PDO(sprintf('mysql:unix_socket=%s;dbname=%s', $l->socket, $l->database), $l->user, $l->password,
                [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
            $this->assertSame('pristine', $sock->query('SELECT v FROM canary')->fetchColumn());
            $this->assertSame($tcp->query('SELECT CURRENT_USER()')->fetchColumn(), $sock->query('SELECT CURRENT_USER()')->fetchColumn());
            try {
                new \PDO($l->pdoDsn(), $l->user, $l->password . 'x');
                $this->fail('a wrong password was accepted');
            } catch (\PDOException $e) {
                $this->assertStringContainsString('Access denied', $e->getMessage());
            }
        } finally {
            $c->release($l->id);
            $c->poolDown('phpconn');
        }
    }

    /**
     * A fork is a template of a lease's current state: its leases see the
     * row written before it, the same key returns the fork made before,
     * and the lease's connection goes on.
     */
    public function testForkMakesATemplateOfALeaseAndTheLeaseGoesOn(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phpforkbase', 'key-forkbase', fn (array $conn) => self::canary($conn));
        Pristine::ensurePool($c, 'phpforkbase', $t['hash'], 1);
        $l = $c->lease('phpforkbase', 'testFork');
        try {
            $db = $l->pdo();
            $db->exec("UPDATE canary SET v = 'loaded'");
            $a = $c->fork($l->id, 'phpforked', 'fixtures-v1');
            $this->assertTrue($a['built']);
            $this->assertSame(['phpforked', $t['hash'], 'phpforkbase'], [$a['template']['name'], $a['template']['parent'], $a['template']['parent_name']]);
            // The holder's connection survives the fork.
            $this->assertSame('loaded', $db->query('SELECT v FROM canary')->fetchColumn());
            // The same key again: the fork made before, at once.
            $again = $c->fork($l->id, 'phpforked', 'fixtures-v1');
            $this->assertFalse($again['built']);
            $this->assertSame($a['template']['hash'], $again['template']['hash']);
        } finally {
            $db = null;
            $c->release($l->id);
        }
        Pristine::ensurePool($c, 'phpforked', $a['template']['hash'], 1);
        $f = $c->lease('phpforked');
        try {
            $this->assertSame('loaded', $f->pdo()->query('SELECT v FROM canary')->fetchColumn());
        } finally {
            $c->release($f->id);
            $c->poolDown('phpforked');
            $c->poolDown('phpforkbase');
        }
    }

    public function testFaultsSayCauseAndFix(): void
    {
        try {
            Client::unix(sys_get_temp_dir() . '/nowhere/pristine.sock')->health();
            $this->fail('no error without a daemon');
        } catch (NoDaemonException $e) {
            $this->assertStringContainsString('no pristine daemon is running', $e->getMessage());
            $this->assertStringContainsString('pristine serve', $e->getMessage());
        }
        $c = self::$d->client;
        try {
            Pristine::ensureTemplate($c, 'phpfault', 'key-fault', fn (array $conn) => Pristine::runCommand(Daemon::sqlClient() . ' -u"$MYSQL_USER" "$MYSQL_DATABASE" -e "CREATE TABLE broken ("', $conn));
            $this->fail('a failing build succeeded');
        } catch (TemplateBuildException $e) {
            $this->assertStringContainsString('build failed, so it was aborted', $e->getMessage());
            $this->assertStringContainsString('SQL syntax', $e->getMessage());
        }
        $t = Pristine::ensureTemplate($c, 'phpfault', 'key-fault', fn (array $conn) => self::canary($conn));
        $this->assertSame('ready', $t['status']);
        Pristine::ensurePool($c, 'phpfault', $t['hash'], 1);
        $held = $c->lease('phpfault');
        try {
            $c->lease('phpfault', wait: 1);
            $this->fail('a second lease of a one-slot pool succeeded');
        } catch (PristineException $e) {
            $this->assertSame(503, $e->status);
        }
        try {
            $c->lease('phpfault', wait: 1, ttl: 1e300);
            $this->fail('a lease with a TTL of 1e300 seconds succeeded');
        } catch (PristineException $e) {
            $this->assertSame(400, $e->status);
            $this->assertStringContainsString('604800', $e->getMessage());
        }
        $c->release($held->id);
        $c->poolDown('phpfault');
    }

    public function testKilledTestProcessLeaseIsReclaimed(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phpkill', 'key-kill', fn (array $conn) => self::canary($conn));
        Pristine::ensurePool($c, 'phpkill', $t['hash'], 1);
        $code = sprintf('require %s; $l = Pristine\Client::unix(%s)->lease("phpkill", "doomed"); echo "LEASED ", $l->id, "\n"; sleep(120);',
            var_export(dirname(__DIR__) . '/autoload.php', true), var_export(self::$d->root . '/pristine.sock', true));
        $p = proc_open(['php', '-r', $code], [1 => ['pipe', 'w']], $pipes);
        $line = (string) fgets($pipes[1]);
        $this->assertStringStartsWith('LEASED ', $line);
        $pid = proc_get_status($p)['pid'];
        $leases = $c->leases();
        $this->assertCount(1, $leases);
        $this->assertSame($pid, $leases[0]['pid']);
        posix_kill($pid, 9);
        proc_close($p);
        for ($i = 0; $i < 100 && $c->leases() !== []; $i++) {
            usleep(100000);
        }
        $this->assertSame([], $c->leases());
        $this->assertSame(1, $c->pool('phpkill')['stats']['holder_gone']);
        $c->poolDown('phpkill');
    }

    /** A new pool: ensurePool is back once its first slot answers (min_ready 1), the others still starting. */
    public function testEnsurePoolReturnsAtTheFirstSlot(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phpfirst', 'key-first', fn (array $conn) => self::canary($conn));
        // 12 slots start for a second or more even on MariaDB's reflinks, and
        // fit beside the other tests (MySQL's slots are copies of ~150 MiB).
        Pristine::ensurePool($c, 'phpfirst', $t['hash'], 12);
        $st = $c->pool('phpfirst');
        $this->assertSame(12, $st['size']);
        $this->assertLessThan(12, $st['states']['ready'] ?? 0, 'ensurePool waited for every slot');
        $l = $c->lease('phpfirst', 'first', 60);
        $c->release($l->id);
        $c->poolDown('phpfirst');
    }

    /** A smaller pool grows to the size asked for; a lease's min_size grows it too. */
    public function testEnsurePoolAndMinSizeGrowThePool(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phpgrow', 'key-grow', fn (array $conn) => self::canary($conn));
        Pristine::ensurePool($c, 'phpgrow', $t['hash'], 1);
        $held = $c->lease('phpgrow', 'held');
        Pristine::ensurePool($c, 'phpgrow', $t['hash'], 2);
        $st = $c->pool('phpgrow');
        $this->assertSame(2, $st['size']);
        $this->assertSame(1, $st['base_size']);
        // Nothing is released: only a new slot can answer, so a long wait
        // cannot time out here.
        $second = $c->lease('phpgrow', 'second', 3000);
        $third = $c->lease('phpgrow', 'third', 3000, null, 0, 3);
        $this->assertCount(3, array_unique([$held->port, $second->port, $third->port]));
        $this->assertSame(3, $c->pool('phpgrow')['size']);
        putenv('TEST_TOKEN=4');
        try {
            $this->assertSame(4, Pristine::processesSeen());
        } finally {
            putenv('TEST_TOKEN');
        }
        $c->poolDown('phpgrow');
    }
}

<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The Laravel integration, driven as paratest drives it, on the suite in
 * fixture/laravel (DatabaseTransactions, RefreshDatabase with a seeder,
 * DatabaseMigrations, a cross-database foreign key between two connections
 * of one server, a third connection on another server): the run that
 * builds the templates and the run that reuses them give the same outcome
 * for every test, all passing.
 */
final class LaravelTest extends TestCase
{
    private static Daemon $d;
    private static string $app;

    public static function setUpBeforeClass(): void
    {
        if (!is_file('/usr/share/php/Illuminate/autoload.php')) {
            self::markTestSkipped('Laravel is not installed: apt-get install php-laravel-framework (scripts/install-deps.sh)');
        }
        self::$d = Daemon::start();
        self::$app = __DIR__ . '/fixture/laravel';
    }

    public static function tearDownAfterClass(): void
    {
        if (isset(self::$d)) {
            self::$d->stop();
        }
    }

    /** @return array{0:int,1:string,2:array<string,string>} exit code, output, outcome of each test by token and name */
    private static function runSuite(int $n): array
    {
        $out = rtrim((string) shell_exec('mktemp -d /tmp/pristine-laravel-parity-XXXXXX'));
        exec('export PRISTINE_ROOT=' . escapeshellarg(self::$d->root) . '; bash ' . escapeshellarg(self::$app . '/run.sh')
            . " $n " . escapeshellarg($out) . ' 2>&1', $lines, $code);
        $outcomes = [];
        foreach (glob("$out/junit-*.xml") ?: [] as $f) {
            $token = substr(basename($f, '.xml'), 6);
            $x = simplexml_load_file($f);
            foreach ($x !== false ? $x->xpath('//testcase') : [] as $tc) {
                $state = isset($tc->failure) ? 'failed' : (isset($tc->error) ? 'error' : (isset($tc->skipped) ? 'skipped' : 'passed'));
                $outcomes["$token " . $tc['class'] . '::' . $tc['name']] = $state;
            }
        }
        exec('rm -rf ' . escapeshellarg($out));
        ksort($outcomes);
        return [$code, implode("\n", $lines), $outcomes];
    }

    /** @return array<string,int> templates of the daemon by name: how many builds */
    private static function templates(): array
    {
        $n = [];
        foreach (self::$d->client->request('GET', '/v1/templates')[1] ?? [] as $t) {
            $n[$t['name']] = ($n[$t['name']] ?? 0) + 1;
        }
        ksort($n);
        return $n;
    }

    public function testBuildingAndReusingRunsGiveTheSameOutcomes(): void
    {
        [$code1, $out1, $built] = self::runSuite(2);
        $this->assertSame(0, $code1, $out1);
        $this->assertCount(2 * 7, $built, $out1);
        $this->assertSame(['passed'], array_values(array_unique($built)), $out1);
        // One template per server: mysql and other share one, far has its own.
        $this->assertSame(['laravel_parity' => 1, 'laravel_parity-far' => 1], self::templates());

        [$code2, $out2, $reused] = self::runSuite(2);
        $this->assertSame(0, $code2, $out2);
        $this->assertSame($built, $reused, "per-test outcomes differ between the run that built the templates and the one that reused them:\n$out2");
        $this->assertSame(['laravel_parity' => 1, 'laravel_parity-far' => 1], self::templates(), 'the second run built again');
        $this->assertSame([], self::$d->client->leases(), 'a worker left a lease');
    }

    /**
     * A build no file keys (files => [], so not Laravel's migrations
     * either) is refused before it runs, naming the files option and
     * allowStale.
     */
    public function testABuildNoFileKeysIsRefused(): void
    {
        $before = self::templates();
        exec('export PRISTINE_ROOT=' . escapeshellarg(self::$d->root) . ' PRISTINE_FIXTURE_NO_FILES=1 APP_ENV=testing COLUMNS=2000; php '
            . escapeshellarg(self::$app . '/parallel.php') . ' up 1 2>&1', $lines, $code);
        $out = implode("\n", $lines);
        $this->assertStringContainsString('no files key it', $out);
        $this->assertStringContainsString('allowStale => true', $out);
        $this->assertSame($before, self::templates(), 'a refused build made a template: ' . $out);
    }

    public function testAKeyInputChangeRebuilds(): void
    {
        // A change of a connection's settings that shape the schema (here
        // its collation) is a new template; the same settings are not.
        $cfg = self::$app . '/config/database.php';
        $orig = (string) file_get_contents($cfg);
        file_put_contents($cfg, str_replace("'utf8mb4_unicode_ci'", "'utf8mb4_general_ci'", $orig));
        try {
            [$code, $out] = self::runSuite(1);
        } finally {
            file_put_contents($cfg, $orig);
        }
        $this->assertSame(0, $code, $out);
        $this->assertSame(['laravel_parity' => 2, 'laravel_parity-far' => 2], self::templates());
    }

    /** @param array<string,mixed> $options */
    private static function key(array $options = []): string
    {
        exec('php ' . escapeshellarg(self::$app . '/key.php') . ' ' . escapeshellarg((string) json_encode((object) $options)) . ' 2>&1', $out, $code);
        self::assertSame(0, $code, implode("\n", $out));
        return trim(implode("\n", $out));
    }

    /** @return iterable<string,array{0:string,1:?string,2:?string,3:array<string,mixed>,4:bool}> file, text replaced, replacement (null: a new file; same: touch), options, whether the key changes */
    public static function keyInputs(): iterable
    {
        $m = 'database/migrations/2024_01_01_000000_create_notes_table.php';
        $db = 'config/database.php';
        yield 'a migration edited' => [$m, "string('author')", "string('author', 100)", [], true];
        yield 'a migration added' => ['database/migrations/2024_01_02_000000_more.php', null, "<?php\n", [], true];
        yield 'a seeder edited' => ['database/seeders/DatabaseSeeder.php', "'seeded'", "'seeded2'", [], true];
        yield 'a connection\'s collation' => [$db, "'utf8mb4_unicode_ci'", "'utf8mb4_bin'", [], true];
        yield 'a connection\'s table prefix' => [$db, "'prefix' => ''", "'prefix' => 'x_'", [], true];
        yield 'the default connection' => [$db, "'default' => 'mysql'", "'default' => 'other'", [], true];
        yield 'the migrations table' => [$db, "'migrations' => 'migrations'", "'migrations' => 'migrations_log'", [], true];
        yield 'a connection\'s database' => [$db, "'parity_other'", "'parity_other2'", [], true];
        yield 'two servers become one' => [$db, "'127.0.0.2', 'port' => '3307'", "'127.0.0.1', 'port' => '3306'", [], true];
        yield 'the build command' => [$m, null, '', ['migrate' => 'php artisan migrate --force'], true];
        yield 'the connections served' => [$m, null, '', ['connections' => ['mysql', 'other']], true];
        yield 'a migration touched' => [$m, null, '', [], false];
        yield 'the password' => [$db, "'password' => ''", "'password' => 'secret'", [], false];
        yield 'the far server\'s address' => [$db, "'127.0.0.2', 'port' => '3307'", "'127.0.0.3', 'port' => '3308'", [], false];
    }

    /**
     * @dataProvider keyInputs
     * @param array<string,mixed> $options
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('keyInputs')]
    public function testTheKeySeesEveryInputAndNothingElse(string $file, ?string $from, ?string $to, array $options, bool $changes): void
    {
        $before = self::key();
        $path = self::$app . '/' . $file;
        $orig = is_file($path) ? (string) file_get_contents($path) : null;
        try {
            if ($orig === null) {
                file_put_contents($path, (string) $to);
            } elseif ($from !== null) {
                $this->assertStringContainsString($from, $orig);
                file_put_contents($path, str_replace($from, (string) $to, $orig));
            } else {
                touch($path, time() + 60);
            }
            $after = self::key($options);
        } finally {
            $orig === null ? unlink($path) : file_put_contents($path, $orig);
        }
        $changes ? $this->assertNotSame($before, $after) : $this->assertSame($before, $after);
        $this->assertSame($before, self::key(), 'the key did not come back with the inputs');
    }
}

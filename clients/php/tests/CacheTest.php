<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;
use Pristine\Pristine;
use Pristine\PristineException;

/**
 * ensureTemplate with a fleet cache, through real daemons and a real OCI
 * registry (Debian's docker-registry): two machines build a template once.
 */
final class CacheTest extends TestCase
{
    /** @var resource|null */
    private $registry = null;
    private string $dir = '';

    /** Starts docker-registry on a free loopback port; returns its address. */
    private function startRegistry(): string
    {
        $exe = trim((string) shell_exec('command -v docker-registry'));
        if ($exe === '') {
            $this->markTestSkipped('docker-registry is not installed: run scripts/install-deps.sh');
        }
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $addr = stream_socket_get_name($s, false);
        fclose($s);
        $this->dir = rtrim((string) shell_exec('mktemp -d /tmp/pristine-php-registry-XXXXXX'));
        file_put_contents("$this->dir/registry.yml", "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
            . "storage:\n  filesystem:\n    rootdirectory: $this->dir/storage\nhttp:\n  addr: $addr\n");
        $this->registry = proc_open([$exe, 'serve', "$this->dir/registry.yml"], [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
        for ($i = 0; $i < 100; $i++) {
            if (@file_get_contents("http://$addr/v2/") !== false) {
                return $addr;
            }
            usleep(100000);
        }
        $this->fail('docker-registry did not start');
    }

    protected function tearDown(): void
    {
        if ($this->registry !== null) {
            proc_terminate($this->registry, 9);
            proc_close($this->registry);
        }
        if ($this->dir !== '') {
            exec('rm -rf ' . escapeshellarg($this->dir));
        }
    }

    public function testFleetCacheBuildsOnceAcrossDaemons(): void
    {
        $reg = $this->startRegistry();
        $allow = ['PRISTINE_ALLOW_CACHE' => "http://$reg/fleet"];
        $cache = "$reg/fleet/templates";
        $builds = 0;
        $build = function (array $conn) use (&$builds): void {
            $builds++;
            $db = new \PDO("mysql:host={$conn['host']};port={$conn['port']};dbname={$conn['database']}", $conn['user'], $conn['password']);
            $db->exec("CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, 'pristine')");
        };
        $first = Daemon::start($allow);
        $second = Daemon::start($allow);
        try {
            $a = Pristine::ensureTemplate($first->client, 'phpcache', 'php-key-1', $build, 'shop', 300, $cache);
            $this->assertSame('ready', $a['status']);
            $this->assertSame(1, $builds);
            $b = Pristine::ensureTemplate($second->client, 'phpcache', 'php-key-1', function (): void {
                throw new \RuntimeException("the second daemon built a template its fleet's cache holds");
            }, 'shop', 300, $cache);
            $this->assertSame($a['hash'], $b['hash']);
        } finally {
            $first->stop();
            $second->stop();
        }
        $third = Daemon::start();
        try {
            Pristine::ensureTemplate($third->client, 'phpcache', 'php-key-1', $build, 'shop', 60, $cache);
            $this->fail('a daemon that does not allow the cache used it');
        } catch (PristineException $e) {
            $this->assertSame(403, $e->status);
            $this->assertStringContainsString("--allow-cache $cache", $e->getMessage());
        } finally {
            $third->stop();
        }
    }
}

<?php

declare(strict_types=1);

namespace Pristine\Tests;

use Pristine\Client;

/** A real `pristine serve` on a fresh root under /dev/shm, for one test class. */
final class Daemon
{
    public readonly Client $client;
    public readonly string $addr;
    public readonly string $token;
    /** @var resource */
    private $proc;
    /** @var resource */
    private $stderr;

    private function __construct(public readonly string $base, public readonly string $root)
    {
    }

    /**
     * @param array<string,string> $env added to the daemon's environment
     * @param list<string> $args added to its flags
     */
    public static function start(array $env = [], array $args = []): self
    {
        // $PRISTINE_MARIADBD names the server (MySQL's mysqld in the server
        // matrix, scripts/servers.sh), as pristine itself reads it.
        $server = getenv('PRISTINE_MARIADBD') ?: '/usr/sbin/mariadbd';
        if (!is_executable($server)) {
            \PHPUnit\Framework\Assert::markTestSkipped("$server is not installed: run scripts/install-deps.sh");
        }
        $bin = getenv('PRISTINE_BIN') ?: dirname(__DIR__, 3) . '/bin/pristine';
        if (!is_executable($bin)) {
            throw new \RuntimeException("no pristine binary at $bin: run scripts/build.sh or set PRISTINE_BIN");
        }
        $base = rtrim((string) shell_exec('mktemp -d /dev/shm/pristine-clients-test-XXXXXX'));
        // pristine's servers (the account pristine, when run as root) pass through it.
        chmod($base, 0711);
        $d = new self($base, "$base/root");
        $d->proc = proc_open([$bin, 'serve', '--root', $d->root, '--listen', '127.0.0.1:0', ...$args], [1 => ['file', '/dev/null', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env + getenv());
        $d->stderr = $pipes[2];
        while (($line = fgets($d->stderr)) !== false) {
            if (preg_match('#^pristine: serving http://([^/]+)/#', $line, $m)) {
                $d->addr = $m[1];
                break;
            }
        }
        if (!isset($d->addr)) {
            throw new \RuntimeException("$bin serve did not start");
        }
        stream_set_blocking($d->stderr, false);
        $d->token = trim((string) file_get_contents($d->root . '/token'));
        $d->client = Client::unix($d->root . '/pristine.sock');
        return $d;
    }

    /**
     * The command-line client of the server under test: mariadb, or MySQL's
     * mysql where no mariadb is installed (the MySQL root of the server
     * matrix).
     */
    public static function sqlClient(): string
    {
        foreach (explode(':', (string) getenv('PATH')) as $dir) {
            if ($dir !== '' && is_executable("$dir/mariadb")) {
                return 'mariadb';
            }
        }
        return 'mysql';
    }

    public function stop(): void
    {
        try {
            $this->client->shutdown();
        } catch (\Throwable) {
        }
        for ($i = 0; $i < 600 && proc_get_status($this->proc)['running']; $i++) {
            stream_get_contents($this->stderr);
            usleep(100000);
        }
        proc_terminate($this->proc, 9);
        proc_close($this->proc);
        // Kill servers under our root only, then remove it.
        foreach (glob('/proc/[0-9]*/cmdline') ?: [] as $f) {
            $cmd = (string) @file_get_contents($f);
            if ((str_contains($cmd, 'mariadbd') || str_contains($cmd, 'mysqld')) && str_contains($cmd, $this->base)) {
                posix_kill((int) basename(dirname($f)), 9);
            }
        }
        exec('rm -rf ' . escapeshellarg($this->base));
    }
}

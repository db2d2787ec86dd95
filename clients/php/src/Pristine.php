<?php

declare(strict_types=1);

namespace Pristine;

/** The build-once flow every integration shares. */
final class Pristine
{
    /** The environment variable naming the fleet cache integrations use when none is given in code. */
    public const CACHE_ENV = 'PRISTINE_CACHE';

    /**
     * Returns the template answer (status "ready", with its "hash") of the
     * template keyed by $key, building it with $build($conn) when nobody
     * has: across processes exactly one caller builds a key, the others
     * wait. $conn holds host, port, socket, user, password, database, url
     * and env. A build that throws is aborted.
     *
     * $cache (default: $PRISTINE_CACHE) names an OCI repository a fleet of
     * machines shares: the template is pulled from it when another machine
     * built it, and pushed to it when this caller builds (docs/fleet.md).
     *
     * $keyFiles is how many file paths $key is a ContentKey of: given with a
     * build, the daemon refuses a build that no file keys
     * (PristineException::UNKEYED_BUILD), whose template would stay the same
     * after a migration changes; $allowStale accepts that risk.
     *
     * @param callable(array<string,mixed>):void|null $build
     * @return array<string,mixed>
     */
    public static function ensureTemplate(Client $c, string $name, string $key, ?callable $build, ?string $database = null, float $wait = 1800, ?string $cache = null, ?int $keyFiles = null, bool $allowStale = false): array
    {
        $deadline = microtime(true) + $wait;
        if ($cache === null) {
            $cache = getenv(self::CACHE_ENV) ?: null;
        }
        while (true) {
            $a = $c->beginTemplate($name, $key, $database, $cache, $build === null ? null : $keyFiles, $allowStale);
            if ($a['status'] === 'ready') {
                return $a;
            }
            if ($a['status'] === 'build') {
                return self::build($c, $name, $a, $build);
            }
            while ($a['status'] === 'building') {
                $left = $deadline - microtime(true);
                if ($left <= 0) {
                    throw new PristineException(sprintf('template %s: another process has been building it for longer than %.0fs: see its output, or `pristine template ls`', $name, $wait));
                }
                try {
                    $a = $c->waitTemplate($key, min($left, 30));
                } catch (PristineException $e) {
                    if ($e->status === 404) {
                        break; // the builder aborted: begin again
                    }
                    throw $e;
                }
                if ($a['status'] === 'ready') {
                    return $a;
                }
            }
        }
    }

    /**
     * @param array<string,mixed> $a
     * @return array<string,mixed>
     */
    private static function build(Client $c, string $name, array $a, ?callable $build): array
    {
        if ($build === null) {
            $c->abortTemplate($a['hash']);
            throw new PristineException("template $name: it does not exist and nothing was given to build it");
        }
        try {
            $build($a);
        } catch (\Throwable $e) {
            try {
                $c->abortTemplate($a['hash']);
            } catch (PristineException) {
            }
            throw new TemplateBuildException("template $name: build failed, so it was aborted: " . $e->getMessage(), 0, $e);
        }
        return $c->finishTemplate($a['hash']);
    }

    /**
     * Makes sure a pool of template $hash is up with at least $size slots,
     * bringing one of $size slots up when none is and growing a smaller one
     * to $size (at once: the new slots start in the background and leases
     * wait for them; a notice goes to stderr). Growth beyond the daemon's
     * --max-memory/--max-disk fails at once with the daemon's message, which
     * names the limit. A pool of the same name built from other files is
     * replaced when nobody holds a lease on it, and refused otherwise. A
     * new pool is back as soon as its first slot answers (the others start
     * in the daemon), and a pool a peer is bringing up counts as up: the
     * lease that follows waits in the daemon for its first slot.
     */
    public static function ensurePool(Client $c, string $name, string $hash, int $size): void
    {
        $st = null;
        try {
            $st = $c->pool($name);
        } catch (NoDaemonException $e) {
            throw $e;
        } catch (PristineException $e) {
            if ($e->status === 503) {
                return; // a peer's pool up is making the pool: the lease waits for it
            }
            if ($e->status !== 404) {
                throw $e;
            }
        }
        if ($st !== null) {
            if (($st['hash'] ?? '') === $hash) {
                $have = (int) ($st['size'] ?? 0);
                if ($have < $size) {
                    self::growPool($c, $name, $hash, $have, $size);
                }
                return;
            }
            if (($st['leased'] ?? 0) > 0) {
                throw new PristineException(sprintf('pool %s: a pool of an older build of this template is up with %d leases: let its tests end, or run `pristine pool down --template %s`', $name, $st['leased'], $name));
            }
            $c->poolDown($name);
        }
        try {
            $c->poolUp($hash, max($size, 1), 1); // the first slot is enough: the lease takes it
        } catch (PristineException $e) {
            if ($e->status !== 409) { // 409: a peer brought it up first
                throw new PristineException("pool $name: " . $e->getMessage(), $e->status, $e);
            }
        }
    }

    private static function growPool(Client $c, string $name, string $hash, int $have, int $size): void
    {
        try {
            $st = $c->poolUp($hash, $size);
        } catch (PristineException $e) {
            if ($e->status === 409) {
                return; // a peer grew it first
            }
            throw new PristineException("pool $name: grow it from $have to $size slots: " . $e->getMessage(), $e->status, $e);
        }
        fwrite(STDERR, sprintf("pristine: pool %s had %d slots, this run needs %d: grew it to %d (the extra slots go again after the daemon's --shrink-after idle)\n",
            $name, $have, $size, (int) ($st['size'] ?? $size)));
    }

    /**
     * The slots a run of parallel test processes needs, as far as this
     * process knows: paratest (and Laravel's `test --parallel`) number their
     * workers 1..N in TEST_TOKEN, so worker k knows at least k processes
     * run. 0 outside paratest.
     */
    public static function processesSeen(): int
    {
        $t = getenv('TEST_TOKEN');
        return is_string($t) && ctype_digit($t) ? (int) $t : 0;
    }

    /**
     * Runs a shell command (migrations, a schema load) against the template
     * server $conn describes: it sees DATABASE_URL, MYSQL_HOST, MYSQL_PORT,
     * MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD, MYSQL_DATABASE
     * and Laravel's DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME, DB_PASSWORD.
     *
     * @param array<string,mixed> $conn
     */
    public static function runCommand(string $command, array $conn, ?string $cwd = null): void
    {
        $env = getenv();
        foreach ($conn['env'] ?? [] as $e) {
            [$k, $v] = array_pad(explode('=', (string) $e, 2), 2, '');
            $env[$k] = $v;
        }
        $env['MYSQL_TCP_PORT'] = (string) ($conn['port'] ?? '');
        $env += ['DB_CONNECTION' => 'mysql'];
        $env['DB_HOST'] = (string) ($conn['host'] ?? '127.0.0.1');
        $env['DB_PORT'] = (string) ($conn['port'] ?? '');
        $env['DB_DATABASE'] = (string) ($conn['database'] ?? '');
        $env['DB_USERNAME'] = (string) ($conn['user'] ?? '');
        $env['DB_PASSWORD'] = (string) ($conn['password'] ?? '');
        $p = proc_open(['/bin/sh', '-c', $command], [1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, $cwd, $env);
        if (!is_resource($p)) {
            throw new \RuntimeException("run `$command`: cannot start it");
        }
        $out = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        $code = proc_close($p);
        if ($code !== 0) {
            throw new \RuntimeException(sprintf('`%s` exited with status %d: %s', $command, $code, substr(trim((string) $out), -2000)));
        }
    }
}

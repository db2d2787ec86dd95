<?php

declare(strict_types=1);

namespace Pristine;

/** A leased database: its connection, and the lease's id to release it. */
final class Lease
{
    /** @param array<string,string> $env */
    public function __construct(
        public readonly string $id,
        public readonly string $template,
        public readonly string $host,
        public readonly int $port,
        public readonly string $socket,
        public readonly string $user,
        public readonly string $password,
        public readonly string $database,
        public readonly string $url,
        public readonly array $env,
        public readonly bool $kept = false,
        public readonly int $pid = 0,
        /** The CA certificate (PEM) of a slot reachable over the network; '' for a loopback slot. */
        public readonly string $ca = '',
    ) {
    }

    /** @param array<string,mixed> $d the daemon's JSON */
    public static function fromArray(array $d): self
    {
        $env = [];
        foreach ($d['env'] ?? [] as $e) {
            [$k, $v] = array_pad(explode('=', (string) $e, 2), 2, '');
            $env[$k] = $v;
        }
        return new self((string) $d['id'], (string) ($d['template'] ?? ''), (string) ($d['host'] ?? '127.0.0.1'),
            (int) ($d['port'] ?? 0), (string) ($d['socket'] ?? ''), (string) ($d['user'] ?? ''),
            (string) ($d['password'] ?? ''), (string) ($d['database'] ?? ''), (string) ($d['url'] ?? ''), $env,
            (bool) ($d['kept'] ?? false), (int) ($d['pid'] ?? 0), (string) ($d['ca'] ?? ''));
    }

    /** The PDO DSN of the database, over TCP. */
    public function pdoDsn(): string
    {
        return sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $this->host, $this->port, $this->database);
    }

    /**
     * A file holding the lease's CA certificate (written once per CA, 0600,
     * in the temporary directory), or '' for a loopback lease.
     */
    public function caFile(): string
    {
        if ($this->ca === '') {
            return '';
        }
        $path = sprintf('%s/pristine-ca-%d-%s.pem', sys_get_temp_dir(), function_exists('posix_getuid') ? posix_getuid() : 0, substr(hash('sha256', $this->ca), 0, 16));
        if (!is_file($path)) {
            $tmp = tempnam(sys_get_temp_dir(), 'pristine-ca-');
            chmod($tmp, 0600);
            file_put_contents($tmp, $this->ca);
            rename($tmp, $path);
        }
        return $path;
    }

    /**
     * PDO options of the connection: for a lease with a CA, TLS with the
     * server's certificate verified against it (and its name against the
     * host).
     *
     * @return array<int,mixed>
     */
    public function pdoOptions(): array
    {
        if ($this->ca === '') {
            return [];
        }
        return [\PDO::MYSQL_ATTR_SSL_CA => $this->caFile(), \PDO::MYSQL_ATTR_SSL_VERIFY_SERVER_CERT => true];
    }

    /** A PDO connection that throws on errors (with TLS for a lease with a CA). */
    public function pdo(): \PDO
    {
        return new \PDO($this->pdoDsn(), $this->user, $this->password, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION] + $this->pdoOptions());
    }

    /** A client command line that opens the database: mariadb, or MySQL's mysql where only that is installed. */
    public function mysqlCommand(): string
    {
        $tls = $this->ca === '' ? '' : sprintf(' --ssl-ca=%s --ssl-verify-server-cert', $this->caFile());
        return sprintf('%s -h%s -P%d -u%s -p%s%s %s', self::sqlClient(), $this->host, $this->port, $this->user, $this->password, $tls, $this->database);
    }

    /** The command-line client on PATH: mariadb, else MySQL's mysql, else mariadb. */
    private static function sqlClient(): string
    {
        $on = static function (string $name): bool {
            foreach (explode(':', (string) getenv('PATH')) as $dir) {
                if ($dir !== '' && is_executable("$dir/$name")) {
                    return true;
                }
            }
            return false;
        };
        return $on('mariadb') || !$on('mysql') ? 'mariadb' : 'mysql';
    }
}

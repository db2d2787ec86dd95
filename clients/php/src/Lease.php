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
            (bool) ($d['kept'] ?? false), (int) ($d['pid'] ?? 0));
    }

    /** The PDO DSN of the database, over TCP. */
    public function pdoDsn(): string
    {
        return sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $this->host, $this->port, $this->database);
    }

    /** A PDO connection that throws on errors. */
    public function pdo(): \PDO
    {
        return new \PDO($this->pdoDsn(), $this->user, $this->password, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    /** A mariadb client command line that opens the database. */
    public function mysqlCommand(): string
    {
        return sprintf('mariadb -h%s -P%d -u%s -p%s %s', $this->host, $this->port, $this->user, $this->password, $this->database);
    }
}

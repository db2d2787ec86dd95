<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;
use Pristine\Pristine;

/**
 * A pool node's slots with TLS (`pristine serve --slot-tls`, what a
 * non-loopback --slot-address turns on): the lease carries the CA, and
 * Lease::pdo() connects with TLS verified against it and the host name.
 */
final class TlsTest extends TestCase
{
    private static Daemon $d;

    public static function setUpBeforeClass(): void
    {
        self::$d = Daemon::start([], ['--slot-tls']);
    }

    public static function tearDownAfterClass(): void
    {
        self::$d->stop();
    }

    public function testLeaseConnectsWithVerifiedTls(): void
    {
        $c = self::$d->client;
        $t = Pristine::ensureTemplate($c, 'phptls', 'key-tls', function (array $conn): void {
            Pristine::runCommand(Daemon::sqlClient() . ' -u"$MYSQL_USER" "$MYSQL_DATABASE" -e "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO canary VALUES (1, \'pristine\')"', $conn);
        });
        Pristine::ensurePool($c, 'phptls', $t['hash'], 1);
        $l = $c->lease('phptls', ttl: 60);
        try {
            $this->assertStringContainsString('BEGIN CERTIFICATE', $l->ca);
            $db = $l->pdo();
            $this->assertSame('pristine', $db->query('SELECT v FROM canary')->fetchColumn());
            $cipher = $db->query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")->fetch(\PDO::FETCH_NUM)[1];
            $this->assertNotSame('', $cipher, 'the connection is not TLS');
            // Refused: without TLS (REQUIRE SSL), and with TLS to a host name
            // the certificate does not carry.
            try {
                new \PDO($l->pdoDsn(), $l->user, $l->password, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
                $this->fail('a connection without TLS was accepted');
            } catch (\PDOException $e) {
                $this->assertStringContainsString('Access denied', $e->getMessage());
            }
            // 127.1 reaches the same server over TCP (PDO's "localhost" would
            // take the unix socket), under a name the certificate lacks.
            $wrong = str_replace('host=127.0.0.1', 'host=127.1', $l->pdoDsn());
            try {
                @new \PDO($wrong, $l->user, $l->password, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION] + $l->pdoOptions());
                $this->fail('a connection to a host name the certificate lacks was accepted');
            } catch (\PDOException $e) {
                $this->assertMatchesRegularExpression('/certificate|SSL|peer/i', $e->getMessage());
            }
            $this->assertStringContainsString('--ssl-verify-server-cert', $l->mysqlCommand());
        } finally {
            $c->release($l->id);
        }
    }
}

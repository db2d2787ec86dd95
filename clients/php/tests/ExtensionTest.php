<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;

/** The PHPUnit extension, driven as a user would: phpunit processes against a daemon. */
final class ExtensionTest extends TestCase
{
    private static Daemon $d;

    public static function setUpBeforeClass(): void
    {
        if (version_compare(\PHPUnit\Runner\Version::id(), '10', '>=')) {
            // PHPUnit 10 dropped the TestHook interfaces the extension is made of
            // (the MySQL root of the server matrix has Debian sid's PHPUnit 13).
            self::markTestSkipped('Pristine\\PHPUnit\\Extension is a PHPUnit 9 extension (its TestHook interfaces are gone since PHPUnit 10); PHPUnit '
                . \PHPUnit\Runner\Version::id() . ' loads extensions through its event system, which the extension does not use yet');
        }
        self::$d = Daemon::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$d->stop();
    }

    /** @return array{0:int,1:string} exit code and output */
    private static function sh(string $command): array
    {
        exec('export PRISTINE_ROOT=' . escapeshellarg(self::$d->root) . "; $command 2>&1", $out, $code);
        return [$code, implode("\n", $out)];
    }

    public function testExampleSuiteInParallelProcesses(): void
    {
        [$code, $out] = self::sh('bash ' . escapeshellarg(dirname(__DIR__, 3) . '/examples/php/run-parallel.sh') . ' 3');
        $this->assertSame(0, $code, $out);
        $this->assertSame(3, substr_count($out, 'OK ('), $out);
        $this->assertSame([], self::$d->client->leases());
        $templates = self::$d->client->request('GET', '/v1/templates')[1];
        $this->assertCount(1, array_filter($templates, fn ($t) => $t['name'] === 'php-example'));
    }

    public function testFailedTestKeepsItsDatabase(): void
    {
        [$code, $out] = self::sh('cd ' . escapeshellarg(__DIR__ . '/fixture') . ' && phpunit -c phpunit.xml');
        $this->assertSame(1, $code, $out);
        $this->assertStringContainsString('pristine: kept the database of FailingTest::testFails (failed) for debugging', $out);
        $this->assertMatchesRegularExpression('/release it with: pristine release [0-9a-f]+/', $out);
        $leases = self::$d->client->leases();
        $this->assertCount(1, $leases, $out);
        $this->assertTrue($leases[0]['kept']);
        $l = self::$d->client->getLease($leases[0]['id']);
        $this->assertSame('evidence', $l->pdo()->query('SELECT v FROM canary')->fetchColumn());
        self::$d->client->release($l->id);
    }

    public function testMissingDaemonStopsTheRunWithTheFix(): void
    {
        exec('cd ' . escapeshellarg(__DIR__ . '/fixture') . ' && PRISTINE_ROOT=/nonexistent phpunit -c phpunit.xml 2>&1', $out, $code);
        $out = implode("\n", $out);
        $this->assertSame(2, $code, $out);
        $this->assertStringContainsString('no pristine daemon is running on /nonexistent/pristine.sock: start one with `pristine pool up` or `pristine serve`', $out);
    }
}

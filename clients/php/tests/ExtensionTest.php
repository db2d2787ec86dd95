<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The PHPUnit extension, driven as a user would: phpunit processes of the
 * PHPUnit that runs this test (Pristine\PHPUnit\Extension on PHPUnit 9,
 * Pristine\PHPUnit\PristineExtension on PHPUnit 10 and later) against a
 * real daemon.
 */
final class ExtensionTest extends TestCase
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

    /** PHPUnit 10 and later load extensions through the event system. */
    private static function eventSystem(): bool
    {
        return version_compare(\PHPUnit\Runner\Version::id(), '10', '>=');
    }

    /**
     * A phpunit.xml that runs fixture/$file with the extension of the
     * running PHPUnit and $options (typed as PHPUnit 9 passes them; PHPUnit
     * 10+ gets their strings), written to a temporary file.
     *
     * @param array<string,string|int|bool> $options
     */
    private static function config(string $file, array $options): string
    {
        $options += [
            'files' => 'schema.sql',
            'migrate' => Daemon::sqlClient() . ' -u"$MYSQL_USER" "$MYSQL_DATABASE" < schema.sql',
            'poolSize' => 2,
        ];
        $x = fn (string $s) => htmlspecialchars($s, ENT_XML1 | ENT_QUOTES);
        $ext = '';
        if (self::eventSystem()) {
            foreach ($options as $k => $v) {
                $ext .= sprintf('<parameter name="%s" value="%s"/>', $x($k), $x(is_bool($v) ? ($v ? 'true' : 'false') : (string) $v));
            }
            $ext = "<bootstrap class=\"Pristine\\PHPUnit\\PristineExtension\">$ext</bootstrap>";
        } else {
            foreach ($options as $k => $v) {
                $ext .= sprintf('<element key="%s">%s</element>', $x($k), match (true) {
                    is_bool($v) => '<boolean>' . ($v ? 'true' : 'false') . '</boolean>',
                    is_int($v) => "<integer>$v</integer>",
                    default => '<string>' . $x($v) . '</string>',
                });
            }
            $ext = "<extension class=\"Pristine\\PHPUnit\\Extension\"><arguments><array>$ext</array></arguments></extension>";
        }
        // PHPUnit 13 deprecates cacheResult (and 10-12 do not know its
        // successor): the 10+ run writes its .phpunit.result.cache beside
        // the file, in the daemon's directory.
        $xml = sprintf('<?xml version="1.0" encoding="UTF-8"?>
<phpunit bootstrap="%s" colors="false"%s>
  <testsuites><testsuite name="fixture"><file>%s</file></testsuite></testsuites>
  <extensions>%s</extensions>
</phpunit>
', $x(dirname(__DIR__) . '/autoload.php'), self::eventSystem() ? '' : ' cacheResult="false"', $x(__DIR__ . "/fixture/$file"), $ext);
        $path = self::$d->base . '/phpunit-' . bin2hex(random_bytes(4)) . '.xml';
        file_put_contents($path, $xml);
        return $path;
    }

    /** @return array{0:int,1:string} exit code and output of $command in tests/fixture */
    private static function sh(string $command, string $root = ''): array
    {
        $root = $root !== '' ? $root : self::$d->root;
        exec('cd ' . escapeshellarg(__DIR__ . '/fixture') . ' && export PRISTINE_ROOT=' . escapeshellarg($root) . "; $command 2>&1", $out, $code);
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

    /**
     * @return array<string,array{0:string,1:int,2:list<string>}> scope,
     * leases the two tests see, the canary each finds
     */
    public static function scopes(): array
    {
        return [
            'a database per test' => ['test', 2, ['pristine', 'pristine']],
            'one per phpunit process' => ['process', 1, ['pristine', 'written']],
        ];
    }

    /** @dataProvider scopes */
    #[\PHPUnit\Framework\Attributes\DataProvider('scopes')]
    public function testScope(string $scope, int $leases, array $canaries): void
    {
        $out = self::$d->base . "/scope-$scope.out";
        [$code, $log] = self::sh('PRISTINE_FIXTURE_OUT=' . escapeshellarg($out) . ' phpunit -c '
            . escapeshellarg(self::config('ScopeTest.php', ['template' => 'php-scope', 'scope' => $scope])));
        $this->assertSame(0, $code, $log);
        $this->assertStringContainsString('OK (2 tests', $log);
        $seen = array_map(fn ($l) => explode(' ', $l), file($out, FILE_IGNORE_NEW_LINES));
        $this->assertCount(2, $seen, $log);
        $this->assertCount($leases, array_unique(array_column($seen, 0)), $log);
        $this->assertSame($canaries, array_column($seen, 1), $log);
        // Every lease went back at the end of its test or of the process.
        $this->assertSame([], self::$d->client->leases());
    }

    public function testProcessThatExitsInATestReturnsItsLease(): void
    {
        $out = self::$d->base . '/exit.out';
        [$code, $log] = self::sh('PRISTINE_FIXTURE_OUT=' . escapeshellarg($out) . ' phpunit -c '
            . escapeshellarg(self::config('ExitTest.php', ['template' => 'php-exit'])));
        // 3 from the test's exit() on PHPUnit 9; PHPUnit 10+ report the
        // premature end and exit with 2.
        $this->assertContains($code, [2, 3], $log);
        $this->assertMatchesRegularExpression('/^[0-9a-f]+$/', (string) @file_get_contents($out), $log);
        $this->assertSame([], self::$d->client->leases(), $log);
    }

    public function testFailedTestKeepsItsDatabase(): void
    {
        [$code, $out] = self::sh('phpunit -c ' . escapeshellarg(self::config('FailingTest.php', ['template' => 'php-fixture', 'keepFailed' => true])));
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
        [$code, $out] = self::sh('phpunit -c ' . escapeshellarg(self::config('FailingTest.php', ['template' => 'php-fixture'])), '/nonexistent');
        $this->assertSame(2, $code, $out);
        $this->assertStringContainsString('no pristine daemon is running on /nonexistent/pristine.sock: start one with `pristine pool up` or `pristine serve`', $out);
    }

    public function testAMigrateNoFileKeysStopsTheRunWithTheFix(): void
    {
        [$code, $out] = self::sh('phpunit -c ' . escapeshellarg(self::config('FailingTest.php', ['template' => 'php-fixture', 'files' => ''])));
        $this->assertSame(2, $code, $out);
        $this->assertStringContainsString('set the "files" option of the pristine PHPUnit extension', $out);
        $this->assertStringContainsString('allowStale="true" accepts that risk', $out);
    }

    public function testUnknownScopeStopsTheRunWithTheChoices(): void
    {
        [$code, $out] = self::sh('phpunit -c ' . escapeshellarg(self::config('FailingTest.php', ['template' => 'php-fixture', 'scope' => 'class'])));
        $this->assertSame(2, $code, $out);
        $this->assertStringContainsString('scope "class" of the pristine PHPUnit extension: want "test" (a database per test) or "process" (one per phpunit process)', $out);
    }
}

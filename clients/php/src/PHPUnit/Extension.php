<?php

declare(strict_types=1);

namespace Pristine\PHPUnit;

use PHPUnit\Runner\AfterLastTestHook;
use PHPUnit\Runner\AfterTestErrorHook;
use PHPUnit\Runner\AfterTestFailureHook;
use PHPUnit\Runner\AfterTestHook;
use PHPUnit\Runner\BeforeFirstTestHook;
use PHPUnit\Runner\BeforeTestHook;
use Pristine\Client;
use Pristine\ContentKey;
use Pristine\Lease;
use Pristine\Pristine;
use Pristine\PristineException;

/**
 * PHPUnit 9 extension: a pristine database per test (scope "test") or per
 * phpunit process (scope "process"), from a pristine daemon. In phpunit.xml:
 *
 *   <extensions>
 *     <extension class="Pristine\PHPUnit\Extension">
 *       <arguments><array>
 *         <element key="template"><string>app</string></element>
 *         <element key="files"><string>database/migrations,database/seed.sql</string></element>
 *         <element key="migrate"><string>mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" &lt; database/schema.sql</string></element>
 *         <element key="keepFailed"><boolean>true</boolean></element>
 *       </array></arguments>
 *     </extension>
 *   </extensions>
 *
 * Before each test (or once per process) the lease's connection is put in
 * the environment (DATABASE_URL, MYSQL_*, Laravel's DB_*, PRISTINE_LEASE)
 * and in Extension::lease(). The template is keyed by the content of
 * "files" and built once, by the first phpunit process that needs it, with
 * the "migrate" command. Several phpunit processes may run at once.
 */
final class Extension implements BeforeFirstTestHook, BeforeTestHook, AfterTestHook, AfterTestFailureHook, AfterTestErrorHook, AfterLastTestHook
{
    private static ?Lease $current = null;

    private Client $client;
    private string $template;
    private string $scope;
    private bool $keepFailed;
    private bool $unchanged;
    private bool $failed = false;
    private bool $anyFailed = false;
    private bool $ready = false;

    /** @param array<string,mixed> $options template, files, migrate, database, scope, keepFailed, poolSize, release, wait */
    public function __construct(private readonly array $options = [])
    {
        $this->client = Client::fromEnv();
        $this->template = (string) ($options['template'] ?? 'app');
        $this->scope = (string) ($options['scope'] ?? 'test');
        $this->keepFailed = filter_var($options['keepFailed'] ?? getenv('PRISTINE_KEEP_FAILED') ?: false, FILTER_VALIDATE_BOOLEAN);
        $this->unchanged = ($options['release'] ?? 'unchanged') !== 'dirty';
    }

    /** The database of the running test (or of this process, with scope "process"). */
    public static function lease(): Lease
    {
        if (self::$current === null) {
            throw new \LogicException('no pristine lease: register Pristine\PHPUnit\Extension in phpunit.xml');
        }
        return self::$current;
    }

    public function executeBeforeFirstTest(): void
    {
        try {
            $files = array_filter(array_map('trim', explode(',', (string) ($this->options['files'] ?? ''))));
            if ($files === []) {
                throw new PristineException('set the "files" argument of Pristine\PHPUnit\Extension to the files that define the template (migrations, fixtures, schema dumps)');
            }
            $command = (string) ($this->options['migrate'] ?? '');
            $key = ContentKey::of(array_values($files), [$command]);
            $build = $command === '' ? null : static fn (array $conn) => Pristine::runCommand($command, $conn);
            $t = Pristine::ensureTemplate($this->client, $this->template, $key, $build, $this->options['database'] ?? null);
            Pristine::ensurePool($this->client, $this->template, $t['hash'], (int) ($this->options['poolSize'] ?? getenv('PRISTINE_POOL_SIZE') ?: 4));
            $this->ready = true;
            if ($this->scope === 'process') {
                $this->acquire('phpunit process ' . getmypid());
            }
        } catch (\Throwable $e) {
            $this->abort($e);
        }
    }

    public function executeBeforeTest(string $test): void
    {
        $this->failed = false;
        if ($this->ready && $this->scope === 'test') {
            try {
                $this->acquire($test);
            } catch (\Throwable $e) {
                $this->abort($e);
            }
        }
    }

    public function executeAfterTestFailure(string $test, string $message, float $time): void
    {
        $this->failed = $this->anyFailed = true;
    }

    public function executeAfterTestError(string $test, string $message, float $time): void
    {
        $this->failed = $this->anyFailed = true;
    }

    public function executeAfterTest(string $test, float $time): void
    {
        if ($this->scope === 'test' && self::$current !== null) {
            $this->done($this->failed, $test);
        }
    }

    public function executeAfterLastTest(): void
    {
        if ($this->scope === 'process' && self::$current !== null) {
            $this->done($this->anyFailed, 'this phpunit process');
        }
    }

    private function acquire(string $holder): void
    {
        $wait = (float) ($this->options['wait'] ?? 60);
        try {
            $l = $this->client->lease($this->template, $holder, $wait, getmypid(), 0, Pristine::processesSeen());
        } catch (PristineException $e) {
            throw new PristineException("lease a database of {$this->template}: " . $e->getMessage(), $e->status, $e);
        }
        self::$current = $l;
        $env = $l->env + ['PRISTINE_LEASE' => $l->id, 'MYSQL_TCP_PORT' => (string) $l->port, 'DB_CONNECTION' => 'mysql',
            'DB_HOST' => $l->host, 'DB_PORT' => (string) $l->port, 'DB_DATABASE' => $l->database,
            'DB_USERNAME' => $l->user, 'DB_PASSWORD' => $l->password];
        foreach ($env as $k => $v) {
            putenv("$k=$v");
            $_ENV[$k] = $_SERVER[$k] = $v;
        }
    }

    private function done(bool $failed, string $what): void
    {
        $l = self::$current;
        self::$current = null;
        try {
            if ($failed && $this->keepFailed) {
                $this->client->keep($l->id);
                fwrite(STDERR, sprintf("\npristine: kept the database of %s (failed) for debugging:\n  %s\n  URL %s\n  release it with: pristine release %s\n",
                    $what, $l->mysqlCommand(), $l->url, $l->id));
                return;
            }
            $this->client->release($l->id, $this->unchanged);
        } catch (PristineException $e) {
            fwrite(STDERR, "\npristine: return lease {$l->id}: {$e->getMessage()}\n");
        }
    }

    /** Stops the run: without its database no test can pass. */
    private function abort(\Throwable $e): never
    {
        fwrite(STDERR, "\npristine: " . $e->getMessage() . "\n");
        exit(2);
    }
}

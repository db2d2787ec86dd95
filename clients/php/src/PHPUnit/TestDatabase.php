<?php

declare(strict_types=1);

namespace Pristine\PHPUnit;

use Pristine\Client;
use Pristine\ContentKey;
use Pristine\Lease;
use Pristine\Pristine;
use Pristine\PristineException;

/**
 * The pristine database of each test (scope "test") or of the whole phpunit
 * process (scope "process"): what both PHPUnit extensions do, whichever
 * PHPUnit calls it. Extension (PHPUnit 9, TestHook interfaces) and
 * PristineExtension (PHPUnit 10 and later, the event system) only translate
 * PHPUnit's callbacks into start(), beforeTest(), testFailed(), afterTest()
 * and finish().
 *
 * Tests reach the lease with TestDatabase::lease(), under any PHPUnit; its
 * connection is also in the environment (DATABASE_URL, MYSQL_*, Laravel's
 * DB_*, PRISTINE_LEASE).
 *
 * Options (PHPUnit 9 passes them typed, PHPUnit 10+ as strings):
 *   template    the template's name (default "app")
 *   files       comma-separated files that define the template (its key: a
 *               change to any of them builds a new template); required:
 *               without them the template would be keyed by the migrate
 *               command's text alone and stay the same after a migration
 *               changes
 *   allowStale  "true": accept no files, a template that goes stale when a
 *               file the migrate command reads changes
 *   migrate     shell command that builds the template (sees MYSQL_*, DB_*)
 *   database    the database the template builds into
 *   scope       "test" (default) or "process"
 *   keepFailed  keep a failed test's database (default $PRISTINE_KEEP_FAILED)
 *   poolSize    slots of the pool (default $PRISTINE_POOL_SIZE, else 4)
 *   release     "unchanged" (default: the daemon may skip the reset of an
 *               unwritten database) or "dirty" (always reset)
 *   wait        seconds a lease may wait for a free slot (default 60)
 * The daemon is found as Client::fromEnv() finds it ($PRISTINE_ROOT, or
 * $PRISTINE_URL with $PRISTINE_TOKEN).
 */
final class TestDatabase
{
    /** The option names both extensions accept. */
    public const OPTIONS = ['template', 'files', 'migrate', 'database', 'scope', 'keepFailed', 'poolSize', 'release', 'wait', 'allowStale'];

    private const UNKEYED = 'set the "files" option of the pristine PHPUnit extension to the files that define the template (the migrations, fixtures and schema dumps the migrate command reads): they key it, and without them the template would be keyed by the command\'s text alone, so after a migration changes every run would still get the old template. allowStale="true" accepts that risk';

    private static ?Lease $current = null;

    private ?Client $client = null;
    private string $template;
    private string $scope;
    private bool $keepFailed;
    private string $release;
    private ?string $test = null;
    private bool $failed = false;
    private bool $anyFailed = false;
    private bool $started = false;
    private bool $ready = false;

    /** @param array<string,mixed> $options see the class comment */
    public function __construct(private readonly array $options = [])
    {
        $this->template = (string) ($options['template'] ?? 'app');
        $this->scope = (string) ($options['scope'] ?? 'test');
        $this->keepFailed = filter_var($options['keepFailed'] ?? getenv('PRISTINE_KEEP_FAILED') ?: false, FILTER_VALIDATE_BOOLEAN);
        $this->release = (string) ($options['release'] ?? 'unchanged');
        // Whatever ends the process (a runner that never says the run
        // finished, exit() in a test), the lease it holds goes back.
        // Registered here, as PHPUnit loads the extension: before PHPUnit
        // 10+'s own shutdown handler, which exits and so ends the others.
        // Not in a child a test forked: the lease is its parent's.
        $pid = getmypid();
        register_shutdown_function(function () use ($pid): void {
            if (getmypid() === $pid) {
                $this->finish();
            }
        });
    }

    /** The database of the running test (or of this process, with scope "process"). */
    public static function lease(): Lease
    {
        if (self::$current === null) {
            throw new \LogicException('no pristine lease: register the pristine PHPUnit extension in phpunit.xml (PHPUnit 10+: <bootstrap class="Pristine\\PHPUnit\\PristineExtension"/> in <extensions>; PHPUnit 9: <extension class="Pristine\\PHPUnit\\Extension"/>), and call lease() from a test, not from setUpBeforeClass or a data provider');
        }
        return self::$current;
    }

    /**
     * Before the first test: the template is built (once, by the first
     * process that needs it) and its pool brought up; with scope "process"
     * the process's lease is taken. Stops the run on any error.
     */
    public function start(): void
    {
        if ($this->started) {
            return;
        }
        $this->started = true;
        try {
            if (!in_array($this->scope, ['test', 'process'], true)) {
                throw new PristineException(sprintf('scope "%s" of the pristine PHPUnit extension: want "test" (a database per test) or "process" (one per phpunit process)', $this->scope));
            }
            if (!in_array($this->release, ['unchanged', 'dirty'], true)) {
                throw new PristineException(sprintf('release "%s" of the pristine PHPUnit extension: want "unchanged" or "dirty"', $this->release));
            }
            $files = array_filter(array_map('trim', explode(',', (string) ($this->options['files'] ?? ''))));
            $allowStale = filter_var($this->options['allowStale'] ?? false, FILTER_VALIDATE_BOOLEAN);
            if ($files === [] && !$allowStale) {
                throw new PristineException(self::UNKEYED, 400, null, PristineException::UNKEYED_BUILD);
            }
            $this->client = Client::fromEnv();
            $command = (string) ($this->options['migrate'] ?? '');
            $key = ContentKey::of(array_values($files), [$command]);
            $build = $command === '' ? null : static fn (array $conn) => Pristine::runCommand($command, $conn);
            $database = $this->options['database'] ?? null;
            $database = $database === null || $database === '' ? null : (string) $database;
            try {
                $t = Pristine::ensureTemplate($this->client, $this->template, $key, $build, $database, keyFiles: count($files), allowStale: $allowStale);
            } catch (PristineException $e) {
                if ($e->errorCode === PristineException::UNKEYED_BUILD) {
                    throw new PristineException(self::UNKEYED, $e->status, $e, $e->errorCode);
                }
                throw $e;
            }
            Pristine::ensurePool($this->client, $this->template, $t['hash'], (int) ($this->options['poolSize'] ?? getenv('PRISTINE_POOL_SIZE') ?: 4));
            $this->ready = true;
            if ($this->scope === 'process') {
                $this->acquire('phpunit process ' . getmypid());
            }
        } catch (\Throwable $e) {
            $this->abort($e);
        }
    }

    /**
     * Before test $test (its name, Class::method): with scope "test", its
     * lease. A runner that runs tests without announcing the run first
     * gets start() here.
     */
    public function beforeTest(string $test): void
    {
        $this->start();
        if ($this->scope === 'test' && self::$current !== null) {
            // A test PHPUnit ended without an "after" call (skipped or
            // errored before it was prepared): its lease goes now.
            $this->done($this->failed, (string) $this->test);
        }
        $this->failed = false;
        $this->test = $test;
        if ($this->ready && $this->scope === 'test') {
            try {
                $this->acquire($test);
            } catch (\Throwable $e) {
                $this->abort($e);
            }
        }
    }

    /** The running test failed or errored. */
    public function testFailed(): void
    {
        $this->failed = $this->anyFailed = true;
    }

    /** After test $test: with scope "test", its lease is released (or kept, failed, with keepFailed). */
    public function afterTest(string $test): void
    {
        if ($this->scope === 'test' && self::$current !== null) {
            $this->done($this->failed, $test);
        }
    }

    /** After the last test: the lease still held is released (or kept). */
    public function finish(): void
    {
        if (self::$current === null) {
            return;
        }
        if ($this->scope === 'process') {
            $this->done($this->anyFailed, 'this phpunit process');
        } else {
            $this->done($this->failed, (string) $this->test);
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
            $this->client->release($l->id, $this->release === 'unchanged');
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

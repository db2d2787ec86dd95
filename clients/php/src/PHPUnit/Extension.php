<?php

declare(strict_types=1);

namespace Pristine\PHPUnit;

use PHPUnit\Runner\AfterLastTestHook;
use PHPUnit\Runner\AfterTestErrorHook;
use PHPUnit\Runner\AfterTestFailureHook;
use PHPUnit\Runner\AfterTestHook;
use PHPUnit\Runner\BeforeFirstTestHook;
use PHPUnit\Runner\BeforeTestHook;
use Pristine\Lease;

/**
 * PHPUnit 9 extension (its TestHook interfaces): a pristine database per
 * test (scope "test") or per phpunit process (scope "process"), from a
 * pristine daemon. PHPUnit 10 and later: PristineExtension, the same
 * behaviour through the event system. In phpunit.xml:
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
 * and in TestDatabase::lease(). The template is keyed by the content of
 * "files" and built once, by the first phpunit process that needs it, with
 * the "migrate" command. Several phpunit processes may run at once. The
 * options and what is done with them: TestDatabase.
 */
final class Extension implements BeforeFirstTestHook, BeforeTestHook, AfterTestHook, AfterTestFailureHook, AfterTestErrorHook, AfterLastTestHook
{
    private TestDatabase $db;

    /** @param array<string,mixed> $options template, files, migrate, database, scope, keepFailed, poolSize, release, wait */
    public function __construct(array $options = [])
    {
        $this->db = new TestDatabase($options);
    }

    /** The database of the running test (or of this process): TestDatabase::lease(), kept for PHPUnit 9 suites. */
    public static function lease(): Lease
    {
        return TestDatabase::lease();
    }

    public function executeBeforeFirstTest(): void
    {
        $this->db->start();
    }

    public function executeBeforeTest(string $test): void
    {
        $this->db->beforeTest($test);
    }

    public function executeAfterTestFailure(string $test, string $message, float $time): void
    {
        $this->db->testFailed();
    }

    public function executeAfterTestError(string $test, string $message, float $time): void
    {
        $this->db->testFailed();
    }

    public function executeAfterTest(string $test, float $time): void
    {
        $this->db->afterTest($test);
    }

    public function executeAfterLastTest(): void
    {
        $this->db->finish();
    }
}

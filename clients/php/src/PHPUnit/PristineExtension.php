<?php

declare(strict_types=1);

namespace Pristine\PHPUnit;

use PHPUnit\Event\Test\Errored;
use PHPUnit\Event\Test\ErroredSubscriber;
use PHPUnit\Event\Test\Failed;
use PHPUnit\Event\Test\FailedSubscriber;
use PHPUnit\Event\Test\Finished;
use PHPUnit\Event\Test\FinishedSubscriber;
use PHPUnit\Event\Test\PreparationStarted;
use PHPUnit\Event\Test\PreparationStartedSubscriber;
use PHPUnit\Event\TestRunner\ExecutionFinished;
use PHPUnit\Event\TestRunner\ExecutionFinishedSubscriber;
use PHPUnit\Event\TestRunner\ExecutionStarted;
use PHPUnit\Event\TestRunner\ExecutionStartedSubscriber;
use PHPUnit\Runner\Extension\Extension as PHPUnitExtension;
use PHPUnit\Runner\Extension\Facade;
use PHPUnit\Runner\Extension\ParameterCollection;
use PHPUnit\TextUI\Configuration\Configuration;
use Pristine\Lease;

/**
 * PHPUnit 10 and later (the event system): a pristine database per test
 * (scope "test") or per phpunit process (scope "process"), from a pristine
 * daemon; what Extension does on PHPUnit 9, with the same options and the
 * same code (TestDatabase). In phpunit.xml:
 *
 *   <extensions>
 *     <bootstrap class="Pristine\PHPUnit\PristineExtension">
 *       <parameter name="template" value="app"/>
 *       <parameter name="files" value="database/migrations,database/seed.sql"/>
 *       <parameter name="migrate" value='mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" &lt; database/schema.sql'/>
 *       <parameter name="keepFailed" value="true"/>
 *     </bootstrap>
 *   </extensions>
 *
 * The run's start (TestRunner\ExecutionStarted) builds the template once
 * and brings its pool up; each test's preparation (Test\PreparationStarted,
 * before setUp) leases its database, a Test\Failed or Test\Errored marks it
 * failed, and Test\Finished (after tearDown) releases it, or keeps it when
 * it failed and keepFailed is set; TestRunner\ExecutionFinished releases
 * what is still held. Tests reach the lease with TestDatabase::lease().
 */
final class PristineExtension implements PHPUnitExtension
{
    public function bootstrap(Configuration $configuration, Facade $facade, ParameterCollection $parameters): void
    {
        $options = [];
        foreach (TestDatabase::OPTIONS as $name) {
            if ($parameters->has($name)) {
                $options[$name] = $parameters->get($name);
            }
        }
        $db = new TestDatabase($options);
        $facade->registerSubscribers(
            new class ($db) implements ExecutionStartedSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(ExecutionStarted $event): void
                {
                    $this->db->start();
                }
            },
            new class ($db) implements PreparationStartedSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(PreparationStarted $event): void
                {
                    $this->db->beforeTest($event->test()->id());
                }
            },
            new class ($db) implements FailedSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(Failed $event): void
                {
                    $this->db->testFailed();
                }
            },
            new class ($db) implements ErroredSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(Errored $event): void
                {
                    $this->db->testFailed();
                }
            },
            new class ($db) implements FinishedSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(Finished $event): void
                {
                    $this->db->afterTest($event->test()->id());
                }
            },
            new class ($db) implements ExecutionFinishedSubscriber {
                public function __construct(private readonly TestDatabase $db)
                {
                }

                public function notify(ExecutionFinished $event): void
                {
                    $this->db->finish();
                }
            },
        );
    }

    /** The database of the running test (or of this process): TestDatabase::lease(). */
    public static function lease(): Lease
    {
        return TestDatabase::lease();
    }
}

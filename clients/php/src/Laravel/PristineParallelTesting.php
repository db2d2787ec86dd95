<?php

declare(strict_types=1);

namespace Pristine\Laravel;

use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\ParallelTesting;
use Pristine\Client;
use Pristine\ContentKey;
use Pristine\Lease;
use Pristine\Pristine;

/**
 * Laravel's parallel testing with pristine leases instead of a
 * `{db}_test_{token}` database migrated in every process.
 *
 * Tested with Debian's Laravel 8.83 (php-laravel-framework) and PHPUnit 9.6
 * by examples/laravel, run as paratest runs it.
 *
 * In AppServiceProvider::boot():
 *
 *   if ($this->app->runningUnitTests()) {
 *       \Pristine\Laravel\PristineParallelTesting::register();
 *   }
 *
 * then run `php artisan test --parallel --without-databases` (pristine
 * provides the databases) and use the DatabaseTransactions trait rather than
 * RefreshDatabase (a lease is migrated already). The template is keyed by
 * database/migrations, database/seeders and database/schema, and built once
 * with `php artisan migrate --force --seed` against the template server.
 *
 * Where each callback runs: Laravel calls setUpProcess in paratest's runner
 * process, once per token, before the workers start; there the template is
 * built (once) and the pool brought up. setUpTestCase runs in each worker
 * (TEST_TOKEN, LARAVEL_PARALLEL_TESTING=1): its first call leases the
 * worker's database (held by the worker's pid, released when it exits) and
 * every call points the connection at it.
 */
final class PristineParallelTesting
{
    private static ?Lease $lease = null;

    /**
     * @param array<string,mixed> $options template, files, migrate, connection, poolSize
     */
    public static function register(array $options = []): void
    {
        $template = (string) ($options['template'] ?? 'laravel');
        $connection = (string) ($options['connection'] ?? 'mysql');
        $files = $options['files'] ?? array_values(array_filter(
            [base_path('database/migrations'), base_path('database/seeders'), base_path('database/schema')],
            'file_exists',
        ));
        $migrate = (string) ($options['migrate'] ?? 'php artisan migrate --force --seed');
        $poolSize = (int) ($options['poolSize'] ?? 8);
        // Called with a worker's token (1..N), $ensure grows the pool to at
        // least N: the run's processes are never more than the pool.
        $ensure = static function (int $token = 0) use ($template, $files, $migrate, $poolSize): Client {
            $client = Client::fromEnv();
            $key = ContentKey::of($files, [$migrate]);
            $t = Pristine::ensureTemplate($client, $template, $key,
                static fn (array $conn) => Pristine::runCommand($migrate, $conn, base_path()));
            Pristine::ensurePool($client, $template, $t['hash'], max($poolSize, $token));
            return $client;
        };

        // paratest's runner process: the template and the pool, once.
        ParallelTesting::setUpProcess(static function (int|string $token) use ($ensure): void {
            $ensure(ctype_digit((string) $token) ? (int) $token : 0);
        });

        // Each worker process: its own lease, and every test case's fresh
        // application pointed at it.
        ParallelTesting::setUpTestCase(static function (int|string $token, $testCase) use ($ensure, $template, $connection): void {
            if (self::$lease === null) {
                // Worker k of N knows N >= k: the pool grows to the
                // workers it sees instead of leaving one waiting.
                self::$lease = $ensure()->lease($template, "laravel worker $token", 120, getmypid(), 0, Pristine::processesSeen());
                register_shutdown_function(static function (): void {
                    if (self::$lease !== null) {
                        Client::fromEnv()->release(self::$lease->id);
                        self::$lease = null;
                    }
                });
                foreach (['DB_HOST' => self::$lease->host, 'DB_PORT' => (string) self::$lease->port,
                    'DB_DATABASE' => self::$lease->database, 'DB_USERNAME' => self::$lease->user,
                    'DB_PASSWORD' => self::$lease->password] as $k => $v) {
                    putenv("$k=$v");
                    $_ENV[$k] = $_SERVER[$k] = $v;
                }
            }
            $l = self::$lease;
            config(["database.connections.$connection.host" => $l->host, "database.connections.$connection.port" => $l->port,
                "database.connections.$connection.database" => $l->database, "database.connections.$connection.username" => $l->user,
                "database.connections.$connection.password" => $l->password]);
            DB::purge($connection);
        });
    }
}

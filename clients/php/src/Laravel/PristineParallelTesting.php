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
 * UNTESTED: Laravel cannot be installed where pristine is built (Packagist
 * is not reachable there). This follows Laravel's documented ParallelTesting
 * API (setUpProcess, setUpTestCase, tearDownProcess).
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

        ParallelTesting::setUpProcess(static function (int|string $token) use ($template, $files, $migrate, $options): void {
            $client = Client::fromEnv();
            $key = ContentKey::of($files, [$migrate]);
            $t = Pristine::ensureTemplate($client, $template, $key,
                static fn (array $conn) => Pristine::runCommand($migrate, $conn, base_path()));
            Pristine::ensurePool($client, $template, $t['hash'], (int) ($options['poolSize'] ?? 8));
            self::$lease = $client->lease($template, "laravel worker $token", 120, getmypid());
            foreach (['DB_HOST' => self::$lease->host, 'DB_PORT' => (string) self::$lease->port,
                'DB_DATABASE' => self::$lease->database, 'DB_USERNAME' => self::$lease->user,
                'DB_PASSWORD' => self::$lease->password] as $k => $v) {
                putenv("$k=$v");
                $_ENV[$k] = $_SERVER[$k] = $v;
            }
        });

        // Each test case boots a new application: point its connection at
        // this process's lease.
        ParallelTesting::setUpTestCase(static function (int|string $token, $testCase) use ($connection): void {
            if (self::$lease === null) {
                return;
            }
            $l = self::$lease;
            config(["database.connections.$connection.host" => $l->host, "database.connections.$connection.port" => $l->port,
                "database.connections.$connection.database" => $l->database, "database.connections.$connection.username" => $l->user,
                "database.connections.$connection.password" => $l->password]);
            DB::purge($connection);
        });

        ParallelTesting::tearDownProcess(static function (int|string $token): void {
            if (self::$lease !== null) {
                Client::fromEnv()->release(self::$lease->id);
                self::$lease = null;
            }
        });
    }
}

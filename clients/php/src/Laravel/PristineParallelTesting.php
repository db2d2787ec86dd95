<?php

declare(strict_types=1);

namespace Pristine\Laravel;

use Illuminate\Database\Console\Migrations\FreshCommand;
use Illuminate\Database\Events\QueryExecuted;
use Illuminate\Foundation\Testing\DatabaseMigrations;
use Illuminate\Foundation\Testing\DatabaseTransactions;
use Illuminate\Foundation\Testing\RefreshDatabase;
use Illuminate\Support\Facades\Artisan;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Event;
use Illuminate\Support\Facades\ParallelTesting;
use Pristine\Client;
use Pristine\ContentKey;
use Pristine\Lease;
use Pristine\Pristine;
use Pristine\PristineException;

/**
 * Laravel's parallel testing with pristine leases instead of a
 * `{db}_test_{token}` database migrated in every process.
 *
 * Tested with Debian's Laravel 8.83 (php-laravel-framework) and PHPUnit 9.6
 * by examples/laravel and clients/php/tests/LaravelTest.php, run as paratest
 * runs it.
 *
 * In AppServiceProvider::boot():
 *
 *   if ($this->app->runningUnitTests()) {
 *       \Pristine\Laravel\PristineParallelTesting::register();
 *   }
 *
 * then run `php artisan test --parallel` (pristine provides the
 * databases: in a worker, Laravel's own test database setup steps aside as
 * with --without-databases). Tests keep Laravel's own traits.
 *
 * Three rules (docs/clients.md, "PHP: Laravel"):
 *
 * - Connections that share a server share a slot. The connections named
 *   in `connections` (default: the default connection) are grouped by the
 *   host, port and socket their configuration names: one template holds
 *   every database of a group, one lease per worker serves them all, so
 *   cross-database foreign keys and joins work as on the stock path.
 *   Connections on other servers form groups (templates, pools, leases) of
 *   their own.
 * - Parity by construction. The template holds what `php artisan migrate
 *   --force` builds (the schema; no seeding, as Laravel's own test
 *   databases). Everything else Laravel's test database setup does runs in
 *   every worker as Laravel wrote it, whether or not this run built the
 *   template: the setUpTestDatabase callbacks when a worker's database is
 *   new, `migrate` once per worker for DatabaseTransactions tests,
 *   RefreshDatabase's and DatabaseMigrations' `migrate:fresh` with its
 *   `migrate` (a no-op on the migrated lease, so its events and output are
 *   Laravel's), DatabaseRefreshed event and seeders ($seed, $seeder), and
 *   DatabaseMigrations' rollback. Only the wipe and the schema build of
 *   `migrate:fresh` are replaced: by a fresh lease of the template when the
 *   worker's database was written to since it was leased.
 * - Outside a pristine worker (no TEST_TOKEN, a build, artisan) every
 *   command is Laravel's own.
 *
 * Where each callback runs: Laravel calls setUpProcess in paratest's runner
 * process, once per token, before the workers start; there the templates
 * are built (once) and the pools brought up. setUpTestCase runs in each
 * worker (TEST_TOKEN, LARAVEL_PARALLEL_TESTING=1): its first call leases
 * the worker's databases (held by the worker's pid, released when it
 * exits) and every call points the connections at them.
 */
final class PristineParallelTesting
{
    /** @var array<int,Lease>|null the worker's lease of each group */
    private static ?array $leases = null;
    /** @var list<array{conns:list<string>,server:string,template:string}> */
    private static array $groups = [];
    /** @var array<string,array<string,mixed>> each connection's configuration as the application gave it */
    private static array $original = [];
    /** @var array<int,bool> groups whose database has been written to since it was leased */
    private static array $dirty = [];
    private static bool $schemaIsUpToDate = false;
    private static ?\Closure $ensure = null;
    private static string $holder = '';

    /**
     * @param array<string,mixed> $options template, connections (or one connection), files, migrate, poolSize, allowStale
     */
    public static function register(array $options = []): void
    {
        $template = (string) ($options['template'] ?? 'laravel');
        $migrate = isset($options['migrate']) ? (string) $options['migrate'] : null;
        $poolSize = (int) ($options['poolSize'] ?? 8);
        $connections = self::connections($options);
        if ($migrate !== null && count($connections) > 1) {
            throw new \InvalidArgumentException('pristine: the migrate option runs a command that sees one server (DB_*), but connections names ' . count($connections) . ': leave migrate out, so Laravel\'s own migrate runs with every connection pointed at its template');
        }
        if (self::$original === []) {
            foreach ($connections as $c) {
                self::$original[$c] = (array) config("database.connections.$c");
            }
            self::$groups = self::groups($template, $connections);
        }
        $key = self::contentKey($options);
        $keyFiles = count(self::files($options));
        $allowStale = (bool) ($options['allowStale'] ?? false);
        // Called with a worker's token (1..N), $ensure grows the pools to at
        // least N: the run's processes are never more than the pool.
        self::$ensure = $ensure = static function (int $token = 0) use ($key, $migrate, $poolSize, $keyFiles, $allowStale): Client {
            $client = Client::fromEnv();
            try {
                $hashes = self::ensureTemplates($client, $key, $migrate, $keyFiles, $allowStale);
            } catch (PristineException $e) {
                if ($e->errorCode === PristineException::UNKEYED_BUILD) {
                    throw new PristineException('pristine: the template is built by ' . ($migrate ?? 'php artisan migrate') . ' but no files key it (the files option names none; by default they are database/migrations, database/seeders and database/schema, where they exist), so after a migration changes every run would still get the old template: name the files its build reads in the files option, or pass allowStale => true to accept a template that goes stale when they change', $e->status, $e, $e->errorCode);
                }
                throw $e;
            }
            foreach (self::$groups as $i => $g) {
                Pristine::ensurePool($client, $g['template'], $hashes[$i], max($poolSize, $token));
            }
            return $client;
        };

        // paratest's runner process: the templates and the pools, once.
        ParallelTesting::setUpProcess(static function (int|string $token) use ($ensure): void {
            $ensure(ctype_digit((string) $token) ? (int) $token : 0);
        });

        // Each worker process: its own leases, and every test case's fresh
        // application pointed at them.
        ParallelTesting::setUpTestCase(static function (int|string $token, $testCase): void {
            self::setUpTestCase((string) $token, $testCase);
        });

        // In a worker, migrate:fresh keeps Laravel's steps but the wipe and
        // the schema build (see PristineFreshCommand).
        if (getenv('LARAVEL_PARALLEL_TESTING') && Pristine::processesSeen() > 0) {
            // Laravel 8 binds its commands as command.migrate.fresh; 9 and
            // later by class, with the migrator in the constructor (8's
            // FreshCommand has none and takes no argument). Both names:
            // each version resolves only its own.
            foreach (['command.migrate.fresh', FreshCommand::class] as $fresh) {
                app()->extend($fresh, static fn ($command, $app) => new PristineFreshCommand($app['migrator']));
            }
            // pristine provides the worker's databases: Laravel's own
            // TestDatabases (which would create {db}_test_{token} on the
            // configured server) steps aside, as with --without-databases.
            $_SERVER['LARAVEL_PARALLEL_TESTING_WITHOUT_DATABASES'] = 1;
        }
    }

    /**
     * The content key of the templates register($options) uses: the files
     * (`files`, default database/migrations, database/seeders and
     * database/schema where they exist) and keyExtra().
     *
     * @param array<string,mixed> $options as register() takes them
     */
    public static function contentKey(array $options = []): string
    {
        $files = self::files($options);
        $migrate = isset($options['migrate']) ? (string) $options['migrate'] : null;
        return ContentKey::of($files, self::keyExtra(self::connections($options), $migrate));
    }

    /**
     * The files that key the templates: `files`, by default Laravel's
     * database/migrations, database/seeders and database/schema where they
     * exist (what its migrate and seeders read).
     *
     * @param array<string,mixed> $options
     * @return list<string>
     */
    private static function files(array $options): array
    {
        return array_values(array_map('strval', (array) ($options['files'] ?? array_filter(
            [base_path('database/migrations'), base_path('database/seeders'), base_path('database/schema')],
            'file_exists',
        ))));
    }

    /**
     * @param array<string,mixed> $options
     * @return list<string>
     */
    private static function connections(array $options): array
    {
        $connections = array_values(array_map('strval', (array) ($options['connections']
            ?? [$options['connection'] ?? config('database.default')])));
        foreach ($connections as $c) {
            if (!is_array(config("database.connections.$c"))) {
                throw new \InvalidArgumentException("pristine: connection \"$c\" is not in config/database.php: name configured connections in the connections option");
            }
        }
        return $connections;
    }

    /**
     * The connections grouped by the server their configuration names, in
     * the order given; the first group's template is $template, the others'
     * $template-<their first connection>.
     *
     * @param list<string> $connections
     * @return list<array{conns:list<string>,server:string,template:string}>
     */
    private static function groups(string $template, array $connections): array
    {
        $by = [];
        foreach ($connections as $c) {
            $cfg = self::$original[$c] ?? (array) config("database.connections.$c");
            if (($cfg['driver'] ?? 'mysql') !== 'mysql' && ($cfg['driver'] ?? '') !== 'mariadb') {
                throw new \InvalidArgumentException("pristine: connection \"$c\" has driver \"{$cfg['driver']}\": pristine serves MariaDB and MySQL connections only");
            }
            $server = !empty($cfg['unix_socket']) ? 'socket ' . $cfg['unix_socket']
                : 'tcp ' . ($cfg['host'] ?? '127.0.0.1') . ':' . ($cfg['port'] ?? '3306');
            $by[$server][] = $c;
        }
        $out = [];
        foreach ($by as $server => $conns) {
            $name = $out === [] ? $template : $template . '-' . $conns[0];
            $out[] = ['conns' => $conns, 'server' => (string) $server,
                'template' => substr((string) preg_replace('/[^A-Za-z0-9_.-]/', '_', $name), 0, 64)];
        }
        return $out;
    }

    /**
     * What shapes the schema besides the files: the build command, Laravel's
     * version, the migrations table, the default connection (whose
     * migrations run) and each connection's settings but where its server
     * is and who logs in (pristine replaces those), grouped as they share
     * servers. The server's own version and options are in the daemon's
     * hash of the template.
     *
     * @param list<string> $connections
     * @return list<string>
     */
    public static function keyExtra(array $connections, ?string $migrate): array
    {
        $extra = ['laravel-build ' . ($migrate ?? 'artisan migrate --force (in process)'),
            'laravel ' . app()->version(),
            'migrations-table ' . json_encode(config('database.migrations')),
            'default ' . config('database.default')];
        foreach (self::groups('g', $connections) as $g) {
            $extra[] = 'group ' . implode(',', $g['conns']);
        }
        foreach ($connections as $c) {
            $cfg = self::$original[$c] ?? (array) config("database.connections.$c");
            unset($cfg['host'], $cfg['port'], $cfg['unix_socket'], $cfg['username'], $cfg['password'], $cfg['url'],
                $cfg['read'], $cfg['write'], $cfg['sticky']);
            ksort($cfg);
            $extra[] = "connection $c " . json_encode($cfg, JSON_UNESCAPED_SLASHES);
        }
        return $extra;
    }

    /**
     * The hash of each group's template, building them when nobody has. All
     * groups are built by one `migrate` run (a migration may use any
     * connection): the group templates are begun in order and the build
     * runs in the innermost one, with every connection pointed at its
     * group's template server.
     *
     * @return list<string>
     */
    private static function ensureTemplates(Client $client, string $key, ?string $migrate, int $keyFiles, bool $allowStale): array
    {
        $hashes = [];
        $conns = [];
        $borrowed = [];
        $build = null;
        $build = static function (int $i) use (&$build, &$hashes, &$conns, &$borrowed, $client, $key, $migrate, $keyFiles, $allowStale): void {
            if ($i === count(self::$groups)) {
                self::build($conns, $migrate);
                return;
            }
            $g = self::$groups[$i];
            $groupKey = hash('sha256', "$key\0group $i\0" . implode(',', $g['conns']));
            $built = false;
            $t = Pristine::ensureTemplate($client, $g['template'], $groupKey,
                static function (array $conn) use (&$build, &$conns, &$built, $i): void {
                    $conns[$i] = $conn;
                    $built = true;
                    $build($i + 1);
                }, (string) (self::$original[$g['conns'][0]]['database'] ?? 'laravel'), keyFiles: $keyFiles, allowStale: $allowStale);
            $hashes[$i] = $t['hash'];
            if (!$built) {
                if ($i === 0) {
                    // The first group is ready: so are the others (built
                    // together), or they are built in this call.
                    for ($j = 1; $j < count(self::$groups); $j++) {
                        $hashes[$j] = Pristine::ensureTemplate($client, self::$groups[$j]['template'],
                            hash('sha256', "$key\0group $j\0" . implode(',', self::$groups[$j]['conns'])),
                            static fn () => throw new \RuntimeException('the first group\'s template is built but this one is not: run `pristine template rm ' . self::$groups[0]['template'] . '` to build both again'),
                            (string) (self::$original[self::$groups[$j]['conns'][0]]['database'] ?? 'laravel'))['hash'];
                    }
                    return;
                }
                // Built by an earlier run while an outer group was not: the
                // build migrates against a lease of it, thrown away after.
                $l = $client->lease($g['template'], 'laravel template build', 120, getmypid());
                $borrowed[] = $l;
                $conns[$i] = ['host' => $l->host, 'port' => $l->port, 'user' => $l->user, 'password' => $l->password,
                    'database' => $l->database];
                $build($i + 1);
            }
        };
        try {
            $build(0);
        } finally {
            foreach ($borrowed as $l) {
                $client->release($l->id);
            }
        }
        ksort($hashes);
        return array_values($hashes);
    }

    /**
     * Builds the schema of every group: a shell command (the `migrate`
     * option; it sees the first group's server as DB_* and MYSQL_*), or
     * Laravel's own `migrate --force` in this process with every connection
     * pointed at its group's template server and its configured database
     * (created first when it is not the template's own).
     *
     * @param array<int,array<string,mixed>> $conns
     */
    private static function build(array $conns, ?string $migrate): void
    {
        if ($migrate !== null) {
            Pristine::runCommand($migrate, $conns[0], base_path());
            return;
        }
        $saved = [];
        try {
            foreach (self::$groups as $i => $g) {
                foreach ($g['conns'] as $c) {
                    $saved[$c] = config("database.connections.$c");
                    self::point($c, $conns[$i], (string) (self::$original[$c]['database'] ?? ''));
                }
                $first = $g['conns'][0];
                foreach (array_slice($g['conns'], 1) as $c) {
                    $db = (string) (self::$original[$c]['database'] ?? '');
                    DB::connection($first)->statement('CREATE DATABASE IF NOT EXISTS `' . str_replace('`', '``', $db) . '`');
                }
            }
            $code = Artisan::call('migrate', ['--force' => true]);
            if ($code !== 0) {
                throw new \RuntimeException("php artisan migrate exited with status $code: " . trim(Artisan::output()));
            }
        } finally {
            foreach ($saved as $c => $cfg) {
                config(["database.connections.$c" => $cfg]);
                DB::purge($c);
            }
        }
    }

    /** @param array<string,mixed> $conn host, port, user, password of a server pristine handed out */
    private static function point(string $connection, array $conn, string $database): void
    {
        config(["database.connections.$connection.host" => $conn['host'] ?? '127.0.0.1',
            "database.connections.$connection.port" => $conn['port'] ?? '',
            "database.connections.$connection.unix_socket" => '',
            "database.connections.$connection.url" => null,
            "database.connections.$connection.database" => $database,
            "database.connections.$connection.username" => $conn['user'] ?? '',
            "database.connections.$connection.password" => $conn['password'] ?? '']);
        DB::purge($connection);
    }

    private static function setUpTestCase(string $token, object $testCase): void
    {
        self::$holder = "laravel worker $token";
        $new = false;
        if (self::$leases === null) {
            $client = (self::$ensure)();
            self::$leases = [];
            foreach (self::$groups as $i => $g) {
                // Worker k of N knows N >= k: the pool grows to the workers
                // it sees instead of leaving one waiting.
                self::$leases[$i] = $client->lease($g['template'], self::$holder, 120, getmypid(), 0, Pristine::processesSeen());
                self::$dirty[$i] = false;
            }
            register_shutdown_function(static function (): void {
                $c = Client::fromEnv();
                foreach (self::$leases ?? [] as $l) {
                    $c->release($l->id);
                }
                self::$leases = null;
            });
            $new = true;
        }
        self::pointAll();
        // Whatever writes to a worker's database makes the next
        // migrate:fresh take a fresh lease (reads do not).
        Event::listen(QueryExecuted::class, static function (QueryExecuted $q): void {
            if (preg_match('/^\s*(select|show|describe|desc|explain|set|use)\b/i', $q->sql)) {
                return;
            }
            foreach (self::$groups as $i => $g) {
                if (in_array($q->connectionName, $g['conns'], true)) {
                    self::$dirty[$i] = true;
                }
            }
        });
        // Laravel's own TestDatabases::bootTestDatabase, with the database
        // leased instead of created.
        $uses = array_flip(class_uses_recursive(get_class($testCase)));
        if (!isset($uses[DatabaseMigrations::class]) && !isset($uses[DatabaseTransactions::class]) && !isset($uses[RefreshDatabase::class])) {
            return;
        }
        if (isset($uses[DatabaseTransactions::class]) && !self::$schemaIsUpToDate) {
            Artisan::call('migrate');
            self::$schemaIsUpToDate = true;
        }
        if ($new) {
            ParallelTesting::callSetUpTestDatabaseCallbacks(self::$leases[0]->database);
        }
    }

    /** Points every connection at its group's lease, with its configured database. */
    private static function pointAll(): void
    {
        foreach (self::$groups as $i => $g) {
            $l = self::$leases[$i];
            foreach ($g['conns'] as $c) {
                self::point($c, ['host' => $l->host, 'port' => $l->port, 'user' => $l->user, 'password' => $l->password],
                    (string) (self::$original[$c]['database'] ?? $l->database));
            }
        }
        if (isset(self::$leases[0])) {
            $l = self::$leases[0];
            foreach (['DB_HOST' => $l->host, 'DB_PORT' => (string) $l->port, 'DB_DATABASE' => (string) (self::$original[self::$groups[0]['conns'][0]]['database'] ?? $l->database),
                'DB_USERNAME' => $l->user, 'DB_PASSWORD' => $l->password] as $k => $v) {
                putenv("$k=$v");
                $_ENV[$k] = $_SERVER[$k] = $v;
            }
        }
    }

    /** Whether this process is a pristine worker holding leases. */
    public static function active(): bool
    {
        return self::$leases !== null;
    }

    /**
     * What migrate:fresh's wipe and schema build leave: on the stock path
     * the wipe empties $connection's database (null: the default's) and
     * `migrate` then runs every migration again, on whatever connection
     * each names; here each group's lease is kept when nothing has written
     * to it since it was leased, and replaced by a fresh lease of its
     * template otherwise.
     */
    public static function fresh(?string $connection): void
    {
        foreach (self::$groups as $i => $g) {
            if (!self::$dirty[$i]) {
                continue;
            }
            // The old lease goes first: with a pool as big as the run's
            // workers, one more slot per worker may not be there.
            $client = Client::fromEnv();
            $client->release(self::$leases[$i]->id);
            unset(self::$leases[$i]);
            self::$leases[$i] = $client->lease($g['template'], self::$holder, 120, getmypid(), 0, Pristine::processesSeen());
            self::$dirty[$i] = false;
        }
        self::pointAll();
    }
}

<?php
// The Composer package's example, run from the installed archive by
// scripts/test-client-packages.sh: a template built from a tiny SQL string,
// a pool of one, one lease, a query on it, its release.
require __DIR__ . '/vendor/autoload.php';

use Pristine\Client;
use Pristine\Pristine;

$sql = ['CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))', "INSERT INTO t VALUES (1, 'pristine')"];
$client = Client::fromEnv();
$tpl = Pristine::ensureTemplate($client, 'pkg-php', 'client-packages-php-1', function (array $c) use ($sql): void {
    $db = new PDO("mysql:host={$c['host']};port={$c['port']};dbname={$c['database']}", $c['user'], $c['password']);
    foreach ($sql as $stmt) {
        $db->exec($stmt);
    }
});
Pristine::ensurePool($client, 'pkg-php', $tpl['hash'], 1);
$lease = $client->lease('pkg-php');
$name = $lease->pdo()->query('SELECT name FROM t WHERE id = 1')->fetchColumn();
$client->release($lease->id);
$client->poolDown('pkg-php');
if ($name !== 'pristine') {
    fwrite(STDERR, "read " . var_export($name, true) . ", want pristine\n");
    exit(1);
}
$from = (new ReflectionClass(Client::class))->getFileName();
echo "php: leased {$lease->database} on port {$lease->port}, read '$name', released (client from $from)\n";

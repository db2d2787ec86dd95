<?php

declare(strict_types=1);

namespace Pristine\Tests;

use PHPUnit\Framework\TestCase;
use Pristine\ContentKey;

/**
 * The PHP content key (the PHPUnit extension's and Laravel's) per kind of
 * input: a change of what the files say gives a new key (the template is
 * built again), anything else the same key (it is not). Go's
 * client.TestContentKeyInputKinds has the same cases.
 */
final class KeyTest extends TestCase
{
    private string $dir = '';

    protected function setUp(): void
    {
        $this->dir = sys_get_temp_dir() . '/pristine-keytest-' . getmypid() . '-' . bin2hex(random_bytes(4));
        mkdir("$this->dir/m", 0o755, true);
        file_put_contents("$this->dir/m/001.sql", 'CREATE TABLE a (id INT);');
        file_put_contents("$this->dir/m/002.sql", 'CREATE TABLE b (id INT);');
    }

    protected function tearDown(): void
    {
        exec('rm -rf ' . escapeshellarg($this->dir));
    }

    /** @return iterable<string,array{0:string,1:callable(string):void,2:list<string>,3:bool}> */
    public static function inputs(): iterable
    {
        yield 'a byte changed' => ['m', fn ($d) => file_put_contents("$d/m/001.sql", 'CREATE TABLE a (id BIGINT);'), [], false];
        yield 'a file renamed' => ['m', fn ($d) => rename("$d/m/002.sql", "$d/m/003.sql"), [], false];
        yield 'a file removed' => ['m', fn ($d) => unlink("$d/m/002.sql"), [], false];
        yield 'an empty file added' => ['m', fn ($d) => touch("$d/m/003.sql"), [], false];
        yield 'a glob matches one more' => ['m/*.sql', fn ($d) => file_put_contents("$d/m/003.sql", 'x'), [], false];
        yield 'the build command (extra)' => ['m', fn ($d) => null, ['mariadb < schema.sql'], false];
        yield 'a file the glob does not match' => ['m/*.sql', fn ($d) => file_put_contents("$d/m/README", 'x'), [], true];
        yield 'times changed' => ['m', fn ($d) => touch("$d/m/001.sql", time() + 3600), [], true];
        yield 'mode changed' => ['m', fn ($d) => chmod("$d/m/001.sql", 0o600), [], true];
        yield 'the same bytes written again' => ['m', fn ($d) => file_put_contents("$d/m/001.sql", 'CREATE TABLE a (id INT);'), [], true];
        yield 'an empty directory added' => ['m', fn ($d) => mkdir("$d/m/empty"), [], true];
    }

    /**
     * @dataProvider inputs
     * @param callable(string):void $edit
     * @param list<string> $extra
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('inputs')]
    public function testAChangeRebuildsAndANonChangeDoesNot(string $pattern, callable $edit, array $extra, bool $same): void
    {
        $before = ContentKey::of(["$this->dir/$pattern"]);
        clearstatcache();
        $edit($this->dir);
        clearstatcache();
        $after = ContentKey::of(["$this->dir/$pattern"], $extra);
        $same ? $this->assertSame($before, $after) : $this->assertNotSame($before, $after);
    }
}

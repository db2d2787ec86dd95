<?php

namespace Tests\Feature;

use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\ParallelTesting;
use Tests\TestCase;

/**
 * Run by N phpunit processes at once (run-parallel.sh): each must have a
 * database of its own, migrated once in the template, where the others'
 * writes never show.
 */
class IsolationTest extends TestCase
{
    public function testEachProcessHasItsOwnDatabase(): void
    {
        $token = (string) ParallelTesting::token();
        $this->assertNotSame('', $token, 'run with TEST_TOKEN and LARAVEL_PARALLEL_TESTING=1');
        // The migration ran in the template: the table and its seed row.
        $this->assertSame(['seed'], DB::table('notes')->pluck('author')->all());

        DB::table('notes')->insert(['author' => "token $token", 'body' => 'written by this process']);
        $results = getenv('PRISTINE_LARAVEL_RESULTS');
        $n = (int) getenv('PRISTINE_LARAVEL_PROCESSES');
        touch("$results/written-$token");
        // Every process has written before any counts (bounded: a missing
        // process fails the test, it does not hang it).
        for ($i = 0; $i < 600 && count(glob("$results/written-*")) < $n; $i++) {
            usleep(100000);
        }
        $this->assertCount($n, glob("$results/written-*"), 'not every process wrote');

        $this->assertSame(['seed', "token $token"], DB::table('notes')->orderBy('id')->pluck('author')->all(),
            'another process\'s write is visible in this database');
        $where = DB::selectOne('SELECT @@port AS port, DATABASE() AS db');
        file_put_contents("$results/db-$token", "{$where->port} {$where->db}\n");
    }
}

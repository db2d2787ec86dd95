<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Pristine\PHPUnit\TestDatabase;

/** Every test starts from the schema's rows, whatever the others wrote. */
final class PristineTest extends TestCase
{
    /** @return array<string,array{int}> */
    public static function runs(): array
    {
        return ['first' => [1], 'second' => [2], 'third' => [3]];
    }

    /** @dataProvider runs (PHPUnit 9; the attribute for PHPUnit 10+) */
    #[\PHPUnit\Framework\Attributes\DataProvider('runs')]
    public function testStartsPristineThenWrites(int $n): void
    {
        $db = TestDatabase::lease()->pdo();
        $this->assertSame(0, (int) $db->query('SELECT COUNT(*) FROM transfers')->fetchColumn());
        $this->assertSame(10000, (int) $db->query("SELECT balance_cents FROM accounts WHERE owner = 'alice'")->fetchColumn());
        $db->exec("UPDATE accounts SET balance_cents = $n WHERE owner = 'alice'");
        $db->exec("INSERT INTO accounts (owner) VALUES ('dave$n')");
    }

    public function testEnvironmentNamesTheLease(): void
    {
        $l = TestDatabase::lease();
        $this->assertSame($l->id, getenv('PRISTINE_LEASE'));
        $this->assertSame($l->database, getenv('DB_DATABASE'));
        $this->assertStringStartsWith('mysql://', (string) getenv('DATABASE_URL'));
    }
}

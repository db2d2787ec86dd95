<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Pristine\PHPUnit\TestDatabase;

final class SchemaTest extends TestCase
{
    public function testForeignKeysHold(): void
    {
        $db = TestDatabase::lease()->pdo();
        $this->expectException(PDOException::class);
        $db->exec('INSERT INTO transfers (from_id, to_id, cents) VALUES (998, 999, 1)');
    }

    public function testDroppingATableHarmsNoOtherTest(): void
    {
        $db = TestDatabase::lease()->pdo();
        $db->exec('DROP TABLE transfers');
        $this->assertSame(1, (int) $db->query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()")->fetchColumn());
    }
}

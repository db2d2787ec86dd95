<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Pristine\PHPUnit\TestDatabase;

final class TransferTest extends TestCase
{
    public function testTransferMovesMoney(): void
    {
        $bank = new Bank(TestDatabase::lease()->pdo());
        $bank->transfer('alice', 'bob', 2500);
        $this->assertSame(7500, $bank->balance('alice'));
        $this->assertSame(7500, $bank->balance('bob'));
    }

    public function testOverdraftIsRefused(): void
    {
        $bank = new Bank(TestDatabase::lease()->pdo());
        $this->expectException(RuntimeException::class);
        $bank->transfer('carol', 'alice', 1);
    }
}

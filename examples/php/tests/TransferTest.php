<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Pristine\PHPUnit\Extension;

final class TransferTest extends TestCase
{
    public function testTransferMovesMoney(): void
    {
        $bank = new Bank(Extension::lease()->pdo());
        $bank->transfer('alice', 'bob', 2500);
        $this->assertSame(7500, $bank->balance('alice'));
        $this->assertSame(7500, $bank->balance('bob'));
    }

    public function testOverdraftIsRefused(): void
    {
        $bank = new Bank(Extension::lease()->pdo());
        $this->expectException(RuntimeException::class);
        $bank->transfer('carol', 'alice', 1);
    }
}

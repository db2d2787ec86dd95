<?php

declare(strict_types=1);

/** The example's code under test: transfers between accounts. */
final class Bank
{
    public function __construct(private readonly PDO $db)
    {
    }

    public function balance(string $owner): int
    {
        $s = $this->db->prepare('SELECT balance_cents FROM accounts WHERE owner = ?');
        $s->execute([$owner]);
        $v = $s->fetchColumn();
        if ($v === false) {
            throw new InvalidArgumentException("no account of $owner");
        }
        return (int) $v;
    }

    public function transfer(string $from, string $to, int $cents): void
    {
        $this->db->beginTransaction();
        try {
            $s = $this->db->prepare('SELECT id, balance_cents FROM accounts WHERE owner = ? FOR UPDATE');
            $s->execute([$from]);
            $a = $s->fetch(PDO::FETCH_ASSOC);
            $s->execute([$to]);
            $b = $s->fetch(PDO::FETCH_ASSOC);
            if (!$a || !$b) {
                throw new InvalidArgumentException('no such account');
            }
            if ($a['balance_cents'] < $cents) {
                throw new RuntimeException("$from has too little money");
            }
            $this->db->prepare('UPDATE accounts SET balance_cents = balance_cents - ? WHERE id = ?')->execute([$cents, $a['id']]);
            $this->db->prepare('UPDATE accounts SET balance_cents = balance_cents + ? WHERE id = ?')->execute([$cents, $b['id']]);
            $this->db->prepare('INSERT INTO transfers (from_id, to_id, cents) VALUES (?, ?, ?)')->execute([$a['id'], $b['id'], $cents]);
            $this->db->commit();
        } catch (Throwable $e) {
            $this->db->rollBack();
            throw $e;
        }
    }
}

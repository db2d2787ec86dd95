<?php

declare(strict_types=1);

namespace Pristine;

/** An error the daemon answered with ($status: its HTTP status), or a failure to reach it ($status 0). */
class PristineException extends \RuntimeException
{
    public function __construct(string $message, public readonly int $status = 0, ?\Throwable $previous = null)
    {
        parent::__construct($message, $status, $previous);
    }
}

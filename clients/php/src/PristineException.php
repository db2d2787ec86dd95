<?php

declare(strict_types=1);

namespace Pristine;

/**
 * An error the daemon answered with ($status: its HTTP status), or a failure to reach it ($status 0).
 * 400: a value the daemon refuses (the message gives the allowed range); 429: too many lease
 * requests in progress (lease() retries after a second within its wait).
 */
class PristineException extends \RuntimeException
{
    public function __construct(string $message, public readonly int $status = 0, ?\Throwable $previous = null)
    {
        parent::__construct($message, $status, $previous);
    }
}

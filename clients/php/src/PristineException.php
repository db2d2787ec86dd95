<?php

declare(strict_types=1);

namespace Pristine;

/**
 * An error the daemon answered with ($status: its HTTP status), or a failure to reach it ($status 0).
 * 400: a value the daemon refuses (the message gives the allowed range); 429: too many lease
 * requests in progress (lease() retries after a second within its wait). $errorCode is the
 * daemon's machine-readable kind of the error (self::UNKEYED_BUILD), or ''.
 */
class PristineException extends \RuntimeException
{
    /**
     * The daemon refused a template whose build runs code (a migrate command) that no file keys:
     * the key would be the command's text alone, and a changed migration would silently get the
     * old template. Each integration answers it with its own option names.
     */
    public const UNKEYED_BUILD = 'unkeyed_build';

    public function __construct(string $message, public readonly int $status = 0, ?\Throwable $previous = null, public readonly string $errorCode = '')
    {
        parent::__construct($message, $status, $previous);
    }
}

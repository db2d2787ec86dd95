<?php

declare(strict_types=1);

namespace Pristine;

/** Nothing answers where the daemon should be. */
final class NoDaemonException extends PristineException
{
}

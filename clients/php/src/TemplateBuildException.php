<?php

declare(strict_types=1);

namespace Pristine;

/** The migrations or fixtures failed against the template server; the build was aborted. */
final class TemplateBuildException extends PristineException
{
}

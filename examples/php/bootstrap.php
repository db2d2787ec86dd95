<?php
// The example loads the client without Composer; with Composer,
// vendor/autoload.php does this.
require __DIR__ . '/../../clients/php/autoload.php';
require __DIR__ . '/src/Bank.php';

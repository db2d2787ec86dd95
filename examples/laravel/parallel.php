<?php
// What Laravel's ParallelRunner does in paratest's runner process, without
// paratest (not packaged in Debian): for each token, boot the application
// and call the setUpProcess callbacks ("up"; pristine builds the template
// once and brings the pool up there) or the tearDownProcess ones ("down").
//   php parallel.php up|down N
require __DIR__ . '/bootstrap/autoload.php';

use Illuminate\Contracts\Console\Kernel;
use Illuminate\Support\Facades\ParallelTesting;

[$mode, $n] = [$argv[1] ?? 'up', (int) ($argv[2] ?? 2)];
$_SERVER['LARAVEL_PARALLEL_TESTING'] = 1;
for ($token = 1; $token <= $n; $token++) {
    $app = require __DIR__ . '/bootstrap/app.php';
    $app->make(Kernel::class)->bootstrap();
    ParallelTesting::resolveTokenUsing(static fn () => $token);
    $mode === 'up' ? ParallelTesting::callSetUpProcessCallbacks() : ParallelTesting::callTearDownProcessCallbacks();
}

<?php

namespace App\Providers;

use Illuminate\Support\ServiceProvider;
use Pristine\Laravel\PristineParallelTesting;

class AppServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        // Each parallel test process gets a pristine database of its own;
        // the migrations run once (Laravel's own `migrate`, in the runner
        // process), into the template.
        if ($this->app->runningUnitTests()) {
            PristineParallelTesting::register([
                'template' => 'laravel_example',
                'poolSize' => (int) env('PRISTINE_POOL_SIZE', 4),
            ]);
        }
    }
}

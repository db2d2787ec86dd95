<?php

return [
    'name' => 'pristine-laravel-example',
    'env' => env('APP_ENV', 'production'),
    'debug' => true,
    'timezone' => 'UTC',
    'providers' => [
        Illuminate\Cache\CacheServiceProvider::class,
        Illuminate\Database\DatabaseServiceProvider::class,
        Illuminate\Queue\QueueServiceProvider::class,
        Illuminate\Filesystem\FilesystemServiceProvider::class,
        Illuminate\Foundation\Providers\ConsoleSupportServiceProvider::class,
        Illuminate\Testing\ParallelTestingServiceProvider::class,
        App\Providers\AppServiceProvider::class,
    ],
    'aliases' => [],
];

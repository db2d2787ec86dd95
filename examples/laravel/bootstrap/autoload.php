<?php
// The example's autoloader: Laravel 8 from Debian (php-laravel-framework),
// pristine's PHP client from this repository, and the app's own classes.
require '/usr/share/php/Illuminate/autoload.php';
require __DIR__ . '/../../../clients/php/autoload.php';
spl_autoload_register(static function (string $class): void {
    foreach (['App\\' => __DIR__ . '/../app/', 'Tests\\' => __DIR__ . '/../tests/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $path = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($path)) {
                require $path;
            }
        }
    }
});

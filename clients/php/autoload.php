<?php
// For use without Composer: require this file to load the Pristine\ classes.
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Pristine\\')) {
        $path = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 9)) . '.php';
        if (is_file($path)) {
            require $path;
        }
    }
});

<?php
// Loads the adapter and Symfony: Composer's autoloader when the package was installed with
// Composer, else Debian's packaged Symfony (php-symfony-*) and Predis (php-nrk-predis) from
// /usr/share/php, with a PSR-4 loader for src/ and tests/.

$composer = __DIR__ . '/../vendor/autoload.php';
if (is_file($composer)) {
    require $composer;

    return;
}
foreach (['RateLimiter', 'HttpKernel', 'Cache', 'Lock'] as $component) {
    require_once "/usr/share/php/Symfony/Component/$component/autoload.php";
}
if (is_file('/usr/share/php/Predis/Autoloader.php')) {
    require_once '/usr/share/php/Predis/Autoloader.php';
    Predis\Autoloader::register();
}
spl_autoload_register(static function (string $class): void {
    foreach (['Rl\\RateLimiter\\Tests\\' => __DIR__ . '/', 'Rl\\RateLimiter\\' => __DIR__ . '/../src/'] as $prefix => $dir) {
        if (strncmp($class, $prefix, strlen($prefix)) === 0) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }

            return;
        }
    }
});

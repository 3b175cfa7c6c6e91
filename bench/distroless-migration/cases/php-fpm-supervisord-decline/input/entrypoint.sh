#!/bin/sh
set -eu
php artisan config:cache
php artisan migrate --force
chown -R www-data:www-data storage bootstrap/cache
exec "$@"

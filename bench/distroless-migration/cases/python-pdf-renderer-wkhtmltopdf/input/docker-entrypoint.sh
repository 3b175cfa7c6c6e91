#!/bin/bash
set -euo pipefail
fc-cache -f >/dev/null
envsubst < /app/config.tmpl > /app/config.ini
exec gunicorn -c /app/gunicorn.conf.py renderer.wsgi:app

#!/usr/bin/env bash
# Start a Celery worker (when Redis answers) and the web server, and print how to get in.
set -euo pipefail
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
cd "$(dirname "$0")/.."
# A local demo, not a deployment: DEBUG on (error pages with tracebacks, plain HTTP). The
# production shape is docker-compose.yml (gunicorn, DEBUG off).
export DJANGO_DEBUG=${DJANGO_DEBUG:-true}
PY=.venv/bin/python
mkdir -p var/log
CREDS=$($PY -c 'import json;d=json.load(open("var/demo-credentials.json"));print(d["username"], d["password"])')
TOKEN=$($PY manage.py shell -c 'from rest_framework.authtoken.models import Token; print(Token.objects.get(user__username="admin").key)' 2>/dev/null | tail -n1)
BROKER=$($PY manage.py shell -c 'from django.conf import settings; print(settings.KNOWHUB_BROKER)' 2>/dev/null | tail -n1)
# The Notion webhook (n8n) secret: unless one is configured, generated once and kept beside the
# admin login under var/ (git-ignored), so the n8n credential made from it keeps working.
HOOK_SECRET=$($PY manage.py shell -c 'from django.conf import settings; print(settings.KNOWHUB_NOTION_WEBHOOK_SECRET)' 2>/dev/null | tail -n1)
if [ -z "$HOOK_SECRET" ]; then
  [ -s var/demo-webhook-secret ] || (umask 077 && $PY -c 'import secrets; print(secrets.token_urlsafe(32))' >var/demo-webhook-secret)
  HOOK_SECRET=$(cat var/demo-webhook-secret)
  export KNOWHUB_NOTION_WEBHOOK_SECRET=$HOOK_SECRET
fi
WORKER_PID=""
if [ "$BROKER" = "redis" ]; then
  .venv/bin/celery -A knowhub worker --loglevel=info --concurrency=1 >var/log/worker.log 2>&1 &
  WORKER_PID=$!
  WORKER_NOTE="worker: running (log in var/log/worker.log)"
else
  WORKER_NOTE="worker: none (no Redis on 127.0.0.1:6379) — tasks run inline"
fi
stop_worker() { if [ -n "$WORKER_PID" ]; then kill "$WORKER_PID" 2>/dev/null || true; fi; }
trap stop_worker EXIT INT TERM
cat <<MSG

  knowhub is running at   http://$HOST:$PORT/
  admin:                  http://$HOST:$PORT/admin/   login: ${CREDS% *} / ${CREDS#* }
  API token:              $TOKEN
  try:   curl -s -H "Authorization: Token $TOKEN" -H 'Content-Type: application/json' \\
           -d '{"query": "how does search rank results"}' http://$HOST:$PORT/rag/query
  n8n → knowhub (Notion):  import examples/n8n/notion-to-knowhub.json (steps: examples/n8n/README.md),
           credential "knowhub Notion webhook" (Header Auth): name Authorization, value Bearer $HOOK_SECRET
           and set KNOWHUB_URL=http://$HOST:$PORT in n8n's environment (from Docker: http://host.docker.internal:$PORT)
  n8n chat:                examples/n8n/knowhub-chat.json, credential "knowhub API token": Authorization, Token $TOKEN
  $WORKER_NOTE
  mode:  local demo with DJANGO_DEBUG=$DJANGO_DEBUG (tracebacks shown; not for a public server)
  stop with Ctrl-C (the embedded database keeps running; 'make stop' stops it)

MSG
$PY manage.py runserver "$HOST:$PORT" --noreload

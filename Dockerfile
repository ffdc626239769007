# The production image for web, worker and beat (see docker-compose.yml).
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
RUN pip install --no-cache-dir -e . gunicorn
COPY . .
RUN DJANGO_SECRET_KEY=build DATABASE_URL=postgresql://build@localhost/build python manage.py collectstatic --noinput || true
EXPOSE 8000
CMD ["gunicorn", "knowhub.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--timeout", "120"]

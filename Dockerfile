# The production image for web, worker and beat (see docker-compose.yml).
FROM python:3.11.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
WORKDIR /app
# OCR of scanned PDFs and images (Tesseract, English) and pdftoppm to render the pages.
RUN apt-get update && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng poppler-utils \
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
# gunicorn and whitenoise are project dependencies (pyproject.toml).
RUN pip install --no-cache-dir -e .
COPY . .
# Static files for whitenoise (compressed, content-hashed). Build-time values only: the running
# container gets its secret and database from the environment.
RUN DJANGO_SECRET_KEY=collectstatic-only-not-a-runtime-secret-0123456789abcdefghij \
    DATABASE_URL=postgresql://build@localhost/build \
    python manage.py collectstatic --noinput
# The local model on ONNX Runtime (the default runtime), exported once from the package's weights
# into the image, so no web or worker process exports it at its first request.
RUN python -c "from pathlib import Path; from rag.embeddings.onnx_export import export_model; \
    export_model(Path('var/onnx'), quantized=True)"
RUN useradd --create-home --uid 1000 knowhub && chown -R knowhub /app/var
USER knowhub
EXPOSE 8000
# Workers, threads and timeout: gunicorn.conf.py (WEB_CONCURRENCY, GUNICORN_THREADS).
CMD ["gunicorn", "knowhub.wsgi:application", "--bind", "0.0.0.0:8000"]

#!/usr/bin/env bash
# OCR for scanned PDFs and images: Tesseract with English data, and poppler's pdftoppm to render
# pages. Idempotent and quick when present; without root or apt it says why and exits 0 (the OCR
# tests then skip with that reason).
set -uo pipefail
need=()
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr)
[ -n "$(ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata 2>/dev/null)" ] || need+=(tesseract-ocr-eng)
command -v pdftoppm >/dev/null 2>&1 || need+=(poppler-utils)
if [ ${#need[@]} -eq 0 ]; then
  echo "install_ocr: tesseract (eng) and pdftoppm present"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_ocr: missing ${need[*]} and cannot apt-get install here; OCR tests will be skipped"
  exit 0
fi
if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null); then
  echo "install_ocr: installed ${need[*]}"
else
  echo "install_ocr: could not install ${need[*]}; OCR tests will be skipped"
fi
exit 0

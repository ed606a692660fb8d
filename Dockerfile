# budgetlab: one image for the oracle, the learner service and the CLI (see docker-compose.yml).
# Debian bookworm, whose dataset-fashion-mnist package the demo's data come from.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

# Fashion-MNIST's IDX files in /usr/share/datasets/fashion-mnist (the fashion-AvB datasets): the sandbox demo's
# trousers vs ankle boots, as on a Debian machine with the package; nothing is downloaded at run time.
RUN apt-get update \
    && apt-get install -y --no-install-recommends dataset-fashion-mnist \
    && rm -rf /var/lib/apt/lists/*

# Installed the way README.md's quick start does it (the Makefile's install step).
COPY pyproject.toml README.md LICENSE ./
COPY budgetlab ./budgetlab
COPY web ./web
COPY server ./server
COPY learner ./learner
COPY client ./client
RUN python -m pip install --progress-bar on -e '.[all]'
# The project's own modules compiled once, here: the install is editable (pip compiles site-packages only), and under
# PYTHONDONTWRITEBYTECODE every process (each service, Dask worker and command) would compile the ones it imports from
# source at its start and keep nothing. Python reads bytecode that exists whatever that variable says.
RUN python -m compileall -q budgetlab web server learner client

EXPOSE 8000 8001
# The oracle by default; the learner runs `budgetlab serve learner --host 0.0.0.0` (docker-compose.yml).
CMD ["budgetlab", "serve", "oracle", "--host", "0.0.0.0"]

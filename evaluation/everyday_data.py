"""The everyday-edits corpus itself (``evaluation.everyday`` builds the cases): per request, its id, file
name, kind, instruction, document and the ``(old, new)`` edits that make the gold. Hand-written; never
to be trained on.
"""
from __future__ import annotations

_SERVER_YAML = """\
server:
  host: 0.0.0.0
  port: 8000
  workers: 4
database:
  url: postgres://localhost/app
  pool_size: 10
logging:
  level: info
  format: json
"""

_PYPROJECT = """\
[project]
name = "tidy-csv"
version = "0.4.2"
description = "Clean up messy CSV files"
requires-python = ">=3.9"
dependencies = [
    "click>=8.0",
    "chardet>=5.0",
]

[project.scripts]
tidy-csv = "tidy_csv.cli:main"
"""

RAW: list[tuple[str, str, str, str, str, list[tuple[str, str]]]] = [
    ("yaml-port", "config.yaml", "setting", "Change the port to 8080.", _SERVER_YAML, [("port: 8000", "port: 8080")]),
    ("yaml-log-level", "config.yaml", "setting", "Set the logging level to debug.", _SERVER_YAML, [("level: info", "level: debug")]),
    ("compose-image", "docker-compose.yml", "setting", "Upgrade postgres to 16.", """\
services:
  web:
    build: .
    ports:
      - "8000:8000"
    depends_on:
      - db
    environment:
      DATABASE_URL: postgres://app:secret@db/app
  db:
    image: postgres:14
    volumes:
      - pgdata:/var/lib/postgresql/data
volumes:
  pgdata:
""", [("image: postgres:14", "image: postgres:16")]),
    ("toml-version", "pyproject.toml", "setting", "Bump the version to 0.5.0.", _PYPROJECT, [('version = "0.4.2"', 'version = "0.5.0"')]),
    ("toml-dep", "pyproject.toml", "delete", "Remove the chardet dependency.", _PYPROJECT, [('    "chardet>=5.0",\n', "")]),
    ("json-script", "package.json", "setting", "Make the test script run jest with --coverage.", """\
{
  "name": "todo-api",
  "version": "1.2.0",
  "main": "src/index.js",
  "scripts": {
    "start": "node src/index.js",
    "test": "jest",
    "lint": "eslint src"
  },
  "dependencies": {
    "express": "^4.18.2"
  }
}
""", [('"test": "jest"', '"test": "jest --coverage"')]),
    ("json-noop", "package.json", "noop", "Leave this file as it is.", """\
{
  "name": "todo-api",
  "version": "1.2.0",
  "main": "src/index.js",
  "scripts": {
    "start": "node src/index.js",
    "test": "jest"
  }
}
""", []),
    ("ini-timeout", "app.ini", "setting", "Raise the timeout to 60 seconds.", """\
[server]
bind = 127.0.0.1
port = 5000
timeout = 30

[cache]
backend = redis
ttl = 300
""", [("timeout = 30", "timeout = 60")]),
    ("sh-npm-ci", "deploy.sh", "replace", "Use npm ci instead of npm install.", """\
#!/bin/sh
set -e
APP_DIR=/opt/app
echo "Deploying to $APP_DIR"
cd "$APP_DIR"
git pull origin main
npm install
npm run build
systemctl restart app
echo "Done"
""", [("npm install", "npm ci")]),
    ("sh-debug", "backup.sh", "delete", "Remove the debug line that prints PATH.", """\
#!/bin/bash
set -euo pipefail
SRC="$HOME/documents"
DEST="/mnt/backup/$(date +%F)"
echo "PATH is $PATH"
mkdir -p "$DEST"
rsync -a --delete "$SRC/" "$DEST/"
echo "Backed up $SRC to $DEST"
""", [('echo "PATH is $PATH"\n', "")]),
    ("docker-base", "Dockerfile", "setting", "Use python:3.12-slim as the base image.", """\
FROM python:3.10-slim
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
EXPOSE 8000
CMD ["gunicorn", "-b", "0.0.0.0:8000", "app:app"]
""", [("FROM python:3.10-slim", "FROM python:3.12-slim")]),
    ("docker-expose", "Dockerfile", "setting", "The app listens on 9000 now; fix EXPOSE.", """\
FROM node:20-alpine
WORKDIR /srv
COPY package*.json ./
RUN npm ci --omit=dev
COPY . .
EXPOSE 3000
CMD ["node", "server.js"]
""", [("EXPOSE 3000", "EXPOSE 9000")]),
    ("make-cflags", "Makefile", "setting", "Compile with -O2 instead of -O0.", """\
CC = gcc
CFLAGS = -Wall -O0 -g
OBJS = main.o parser.o util.o

app: $(OBJS)
\t$(CC) $(CFLAGS) -o $@ $(OBJS)

%.o: %.c
\t$(CC) $(CFLAGS) -c $<

clean:
\trm -f app $(OBJS)
""", [("-O0", "-O2")]),
    ("md-typo", "README.md", "fix", "Fix the typo \"recieve\".", """\
# Mailer

A tiny service that sends transactional email.

## Usage

Start the server, then POST a JSON message to `/send`. You will recieve a message id
that you can poll at `/status/<id>`.

## License

MIT
""", [("recieve", "receive")]),
    ("md-heading", "README.md", "replace", "Rename the Usage section to Getting started.", """\
# Mailer

A tiny service that sends transactional email.

## Usage

Start the server, then POST a JSON message to `/send`.

## License

MIT
""", [("## Usage", "## Getting started")]),
    ("html-title", "index.html", "setting", "Change the page title to Dashboard.", """\
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Home</title>
  <link rel="stylesheet" href="style.css">
</head>
<body>
  <main id="app"></main>
  <script src="app.js"></script>
</body>
</html>
""", [("<title>Home</title>", "<title>Dashboard</title>")]),
    ("css-color", "style.css", "setting", "Make the button background #2563eb.", """\
body {
  margin: 0;
  font-family: system-ui, sans-serif;
}

.button {
  padding: 8px 16px;
  background: #888888;
  color: white;
  border-radius: 4px;
}
""", [("background: #888888;", "background: #2563eb;")]),
    ("sql-limit", "report.sql", "setting", "Return 50 rows instead of 10.", """\
SELECT c.name, SUM(o.total) AS revenue
FROM customers c
JOIN orders o ON o.customer_id = c.id
WHERE o.created_at >= DATE '2024-01-01'
GROUP BY c.name
ORDER BY revenue DESC
LIMIT 10;
""", [("LIMIT 10;", "LIMIT 50;")]),
    ("sql-filter", "report.sql", "fix", "Only count paid orders: the status must be 'paid'.", """\
SELECT c.name, COUNT(*) AS orders
FROM customers c
JOIN orders o ON o.customer_id = c.id
WHERE o.status = 'pending'
GROUP BY c.name;
""", [("o.status = 'pending'", "o.status = 'paid'")]),
    ("lua-max", "util.lua", "fix", "Fix the bug in M.max: it returns the minimum.", """\
local M = {}

function M.sum(list)
  local total = 0
  for i = 1, #list do
    total = total + list[i]
  end
  return total
end

function M.max(list)
  local best = list[1]
  for i = 2, #list do
    if list[i] < best then
      best = list[i]
    end
  end
  return best
end

return M
""", [("if list[i] < best then", "if list[i] > best then")]),
    ("lua-rename", "util.lua", "rename", "Rename the function sum to total.", """\
local M = {}

function M.sum(list)
  local acc = 0
  for i = 1, #list do
    acc = acc + list[i]
  end
  return acc
end

function M.mean(list)
  return M.sum(list) / #list
end

return M
""", [("sum", "total")]),
    ("php-greeting", "greet.php", "replace", "Say \"Welcome\" instead of \"Hello\".", """\
<?php

function greet(string $name): string
{
    return "Hello, " . $name . "!";
}

echo greet($argv[1] ?? "world") . PHP_EOL;
""", [('"Hello, "', '"Welcome, "')]),
    ("kotlin-retries", "Client.kt", "setting", "Set maxRetries to 5.", """\
package net.example

class Client(private val baseUrl: String) {
    private val maxRetries = 3
    private val timeoutMs = 2_000L

    fun get(path: String): String {
        var attempt = 0
        while (true) {
            try {
                return fetch(baseUrl + path, timeoutMs)
            } catch (e: java.io.IOException) {
                attempt++
                if (attempt >= maxRetries) throw e
            }
        }
    }
}
""", [("private val maxRetries = 3", "private val maxRetries = 5")]),
    ("kotlin-rename", "Client.kt", "rename", "Rename baseUrl to endpoint.", """\
package net.example

class Client(private val baseUrl: String) {
    fun get(path: String): String = fetch(baseUrl + path)

    fun describe(): String = "Client for $baseUrl"
}
""", [("baseUrl", "endpoint")]),
    ("swift-fix", "Stack.swift", "fix", "isEmpty is inverted; fix it.", """\
struct Stack<Element> {
    private var items: [Element] = []

    mutating func push(_ item: Element) {
        items.append(item)
    }

    mutating func pop() -> Element? {
        return items.popLast()
    }

    var isEmpty: Bool {
        return !items.isEmpty
    }
}
""", [("return !items.isEmpty", "return items.isEmpty")]),
    ("perl-path", "rotate.pl", "setting", "Write the logs to /var/log/app instead of /tmp/logs.", """\
#!/usr/bin/perl
use strict;
use warnings;

my $log_dir = "/tmp/logs";
my $keep = 7;

opendir(my $dh, $log_dir) or die "cannot open $log_dir: $!";
my @old = sort grep { /\\.log$/ } readdir($dh);
closedir($dh);
unlink map { "$log_dir/$_" } @old[0 .. $#old - $keep] if @old > $keep;
""", [('my $log_dir = "/tmp/logs";', 'my $log_dir = "/var/log/app";')]),
    ("elixir-insert", "greeter.ex", "insert", "Add `require Logger` as the first line inside the module.", """\
defmodule Greeter do
  def hello(name) do
    Logger.info("greeting #{name}")
    "Hello, #{name}"
  end
end
""", [("defmodule Greeter do\n", "defmodule Greeter do\n  require Logger\n")]),
    ("r-na", "summary.R", "fix", "mean() fails on missing values; pass na.rm = TRUE.", """\
library(readr)

scores <- read_csv("scores.csv")
avg <- mean(scores$points)
cat("Average:", avg, "\\n")
""", [("mean(scores$points)", "mean(scores$points, na.rm = TRUE)")]),
    ("yaml-noop", "ci.yml", "noop", "No changes needed; keep it as is.", """\
name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: make test
""", []),
    ("yaml-ci-python", "ci.yml", "setting", "Test on Python 3.12 instead of 3.9.", """\
name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.9"
      - run: pip install -e .[test]
      - run: pytest -q
""", [('python-version: "3.9"', 'python-version: "3.12"')]),
]


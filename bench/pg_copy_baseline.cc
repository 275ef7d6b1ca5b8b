// The PostgreSQL baseline of bench/pg_bench.sh: the same points the HTTP ingest benchmark sends
// (10 keys of float values per step), written the way a row-per-point tracker would write them,
// with libpq COPY (binary format, the fastest bulk path) into a table (run, key, step, time,
// value), one transaction per --rows-per-txn rows, committed durably (the server's
// synchronous_commit). Prints JSON: points, seconds, points_per_s, bytes_per_point.
//
//   pg_copy_baseline --url postgresql://... --points 1000000 --keys 10 [--clients 1]
//                    [--rows-per-txn 10000]
#include <endian.h>
#include <libpq-fe.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::string url;
  long long points = 1000000;
  int keys = 10;
  int clients = 1;
  int rows_per_txn = 10000;
};

bool Ok(PGresult* res, const char* what) {
  const ExecStatusType st = PQresultStatus(res);
  const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_COPY_IN;
  if (!ok) std::fprintf(stderr, "%s: %s", what, PQresultErrorMessage(res));
  PQclear(res);
  return ok;
}

void Put16(std::string* out, uint16_t v) {
  v = htobe16(v);
  out->append(reinterpret_cast<const char*>(&v), 2);
}
void Put32(std::string* out, uint32_t v) {
  v = htobe32(v);
  out->append(reinterpret_cast<const char*>(&v), 4);
}
void Put64(std::string* out, uint64_t v) {
  v = htobe64(v);
  out->append(reinterpret_cast<const char*>(&v), 8);
}

// Writes steps [first, last) of client `client` with COPY, committing every rows_per_txn rows.
bool CopyRange(const Args& a, int client, long long first, long long last) {
  PGconn* conn = PQconnectdb(a.url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::fprintf(stderr, "connect: %s", PQerrorMessage(conn));
    PQfinish(conn);
    return false;
  }
  std::vector<std::string> keys;
  for (int k = 0; k < a.keys; ++k) keys.push_back("m" + std::to_string(k));
  bool ok = true;
  long long step = first;
  while (ok && step < last) {
    ok = Ok(PQexec(conn, "BEGIN"), "begin") &&
         Ok(PQexec(conn, "COPY points (run, key, step, time, value) FROM STDIN (FORMAT binary)"),
            "copy");
    std::string buf("PGCOPY\n\377\r\n\0", 11);
    Put32(&buf, 0);  // flags
    Put32(&buf, 0);  // header extension
    long long rows = 0;
    for (; ok && step < last && rows < a.rows_per_txn; ++step) {
      const double base = std::exp(-double(step) / 5000.0);
      for (int k = 0; k < a.keys; ++k, ++rows) {
        Put16(&buf, 5);
        Put32(&buf, 4);
        Put32(&buf, uint32_t(client + 1));
        Put32(&buf, uint32_t(keys[k].size()));
        buf += keys[k];
        Put32(&buf, 8);
        Put64(&buf, uint64_t(step));
        Put32(&buf, 8);
        Put64(&buf, uint64_t(1700000000000LL + step * 100));
        const double v = float(base * (1 + k));
        uint64_t bits;
        std::memcpy(&bits, &v, 8);
        Put32(&buf, 8);
        Put64(&buf, bits);
      }
      if (buf.size() > (1 << 20)) {
        ok = PQputCopyData(conn, buf.data(), int(buf.size())) == 1;
        buf.clear();
      }
    }
    Put16(&buf, 0xffff);  // trailer
    ok = ok && PQputCopyData(conn, buf.data(), int(buf.size())) == 1 &&
         PQputCopyEnd(conn, nullptr) == 1 && Ok(PQgetResult(conn), "copy end") &&
         Ok(PQexec(conn, "COMMIT"), "commit");
  }
  PQfinish(conn);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--url")
      a.url = v;
    else if (k == "--points")
      a.points = std::stoll(v);
    else if (k == "--keys")
      a.keys = std::stoi(v);
    else if (k == "--clients")
      a.clients = std::stoi(v);
    else if (k == "--rows-per-txn")
      a.rows_per_txn = std::stoi(v);
    else {
      std::fprintf(stderr,
                   "usage: pg_copy_baseline --url URL [--points N --keys K --clients C "
                   "--rows-per-txn R]\n");
      return 2;
    }
  }
  PGconn* conn = PQconnectdb(a.url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::fprintf(stderr, "connect: %s", PQerrorMessage(conn));
    return 1;
  }
  if (!Ok(PQexec(conn,
                 "SET client_min_messages = warning; DROP TABLE IF EXISTS points; "
                 "CREATE TABLE points (run integer, key text, "
                 "step bigint, time bigint, value double precision)"),
          "create")) {
    return 1;
  }
  const long long steps = a.points / a.keys;
  const long long per_client = (steps + a.clients - 1) / a.clients;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::vector<char> ok(a.clients, 1);
  for (int c = 0; c < a.clients; ++c) {
    threads.emplace_back([&, c] {
      const long long first = c * per_client, last = std::min(steps, first + per_client);
      ok[c] = first >= last || CopyRange(a, c, first, last);
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (char o : ok) {
    if (!o) return 1;
  }
  PGresult* size = PQexec(conn, "SELECT pg_total_relation_size('points')");
  const double bytes =
      PQresultStatus(size) == PGRES_TUPLES_OK ? std::atof(PQgetvalue(size, 0, 0)) : 0;
  PQclear(size);
  PQfinish(conn);
  const double points = double(steps) * a.keys;
  std::printf(
      "{\"points\":%.0f,\"clients\":%d,\"seconds\":%.3f,\"points_per_s\":%.0f,"
      "\"bytes_per_point\":%.1f}\n",
      points, a.clients, secs, points / secs, bytes / points);
  return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-api: latency and throughput of one API route under concurrent
 * keep-alive clients, over the Unix socket (libcurl multi: N transfers in
 * flight at once on one thread, connections reused).
 *
 *   bench-api SOCKET PATH CONNECTIONS REQUESTS
 *   bench-api SOCKET PATH CONNECTIONS <seconds>s     (as many as fit in the time)
 *
 * Prints one line: route, connections, requests, errors, p50/p99/max in
 * microseconds, requests per second, p99.9 and the answers slower than
 * 20 ms. Reports; asserts nothing about time.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

typedef struct Slot {
    CURL *easy;
    usec_t started;
} Slot;

static size_t discard(char *p, size_t s, size_t n, void *u) {
    return s * n;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char *argv[]) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench-api SOCKET PATH CONNECTIONS REQUESTS\n");
        return 2;
    }
    const char *sock = argv[1], *path = argv[2];
    int conns = atoi(argv[3]);
    long total = atol(argv[4]);
    usec_t duration = 0;
    if (argv[4][0] && argv[4][strlen(argv[4]) - 1] == 's') {
        /* A duration: room for 100k requests a second, at most. */
        duration = (usec_t) (atof(argv[4]) * USEC_PER_SEC);
        total = (long) (atof(argv[4]) * 100000) + conns;
    }
    if (conns <= 0 || total <= 0)
        return 2;
    char url[256];
    snprintf(url, sizeof(url), "http://localhost%s", path);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long) conns);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long) conns);
    Slot *slots = calloc((size_t) conns, sizeof(Slot));
    uint64_t *lat = calloc((size_t) total, sizeof(uint64_t));
    if (!slots || !lat)
        return 1;
    long issued = 0, done = 0, errors = 0;

    for (int i = 0; i < conns; i++) {
        CURL *e = curl_easy_init();
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, sock);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(e, CURLOPT_PRIVATE, &slots[i]);
        slots[i].easy = e;
        if (issued < total) {
            slots[i].started = now_usec(CLOCK_MONOTONIC);
            curl_multi_add_handle(multi, e);
            issued++;
        }
    }

    /* BENCH_API_SLOW=FILE: each answer slower than 10 ms, with its
     * CLOCK_MONOTONIC start (for lining up with perf sched). */
    FILE *slow = getenv("BENCH_API_SLOW") ? fopen(getenv("BENCH_API_SLOW"), "we") : NULL;
    usec_t t0 = now_usec(CLOCK_MONOTONIC);
    long in_flight = issued;
    while (done < total && !(duration && done >= issued)) {
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            Slot *s;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **) &s);
            long code = 0;
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
            if (m->data.result != CURLE_OK || code != 200)
                errors++;
            lat[done++] = now_usec(CLOCK_MONOTONIC) - s->started;
            if (slow && lat[done - 1] > 10 * USEC_PER_MSEC) /* when, to line up with a trace */
                fprintf(slow, "slow start=%" PRIu64 " us latency=%" PRIu64 " us\n", s->started, lat[done - 1]);
            curl_multi_remove_handle(multi, s->easy);
            if (issued < total && (!duration || now_usec(CLOCK_MONOTONIC) - t0 < duration)) {
                /* Re-adding the handle reuses its kept-alive connection. */
                s->started = now_usec(CLOCK_MONOTONIC);
                curl_multi_add_handle(multi, s->easy);
                issued++;
            }
        }
        if (done < issued)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    (void) in_flight;
    usec_t elapsed = now_usec(CLOCK_MONOTONIC) - t0;
    total = done;
    if (total == 0)
        return 1;

    qsort(lat, (size_t) total, sizeof(uint64_t), cmp_u64);
    long over20 = 0; /* answers slower than 20 ms (the API's max target) */
    for (long i = total - 1; i >= 0 && lat[i] > 20 * USEC_PER_MSEC; i--)
        over20++;
    printf("bench-api: GET %-12s conns=%-3d requests=%ld errors=%ld p50=%" PRIu64 "us p99=%" PRIu64
           "us max=%" PRIu64 "us rps=%.0f p999=%" PRIu64 "us over20ms=%ld\n",
           path, conns, total, errors, lat[total / 2], lat[(size_t) ((double) total * 0.99)], lat[total - 1],
           (double) total / ((double) elapsed / USEC_PER_SEC), lat[(size_t) ((double) total * 0.999)], over20);

    if (slow)
        fclose(slow);
    for (int i = 0; i < conns; i++)
        curl_easy_cleanup(slots[i].easy);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    free(slots);
    free(lat);
    return errors > 0 ? 1 : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's side of a worker (worker.h): start it, answer it, collect it. */
#include <errno.h>
#include <stdio.h>

#include "child.h"
#include "util.h"
#include "worker.h"

struct Worker {
    Child *child;
    WorkerCallbacks cb;
    void *userdata;
    char *op;
    bool got_result;
    bool save_pending;           /* a save is not answered yet */
    int error;
    char *message;
    ApplyResult *result;
    Observation *observation;
    json_object *extra;
};

static void send_json(Worker *w, json_object *o) {
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!s)
        return;
    if (child_write(w->child, s, len) < 0 || child_write(w->child, "\n", 1) < 0)
        child_kill(w->child, SIGKILL); /* it would wait for an answer forever */
}

static const char *jstr(json_object *o, const char *k) {
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                            : NULL;
}

static int jint(json_object *o, const char *k) {
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int(v) : 0;
}

static void answer_save(Worker *w, int error) {
    json_object *ack = json_object_new_object();
    if (!ack) {
        child_kill(w->child, SIGKILL);
        return;
    }
    json_object_object_add(ack, "type", json_object_new_string("saved"));
    json_object_object_add(ack, "error", json_object_new_int(error < 0 ? error : 0));
    send_json(w, ack);
    json_object_put(ack);
}

static void on_save(Worker *w, json_object *msg) {
    const char *name = jstr(msg, "name");
    json_object *v = NULL;
    VolumeRecord *rec = NULL;
    int r = -EBADMSG;
    if (name) {
        if (json_object_object_get_ex(msg, "volume", &v) && v)
            r = volume_record_from_json(v, &rec);
        else
            r = 0; /* removed */
        if (r >= 0)
            r = w->cb.on_save ? w->cb.on_save(w, name, TAKE_PTR(rec), w->userdata) : -EOPNOTSUPP;
    }
    volume_record_free(rec);
    if (r == WORKER_SAVE_PENDING) {
        w->save_pending = true; /* worker_answer_save() answers */
        return;
    }
    answer_save(w, r);
}

void worker_answer_save(Worker *w, int error) {
    if (!w || !w->save_pending)
        return;
    w->save_pending = false;
    answer_save(w, error);
}

static void on_progress(Worker *w, json_object *msg) {
    if (!w->cb.on_progress)
        return;
    json_object *v;
    ApplyStepResult step = {
        .kind = plan_step_kind_from_string(jstr(msg, "step")),
        .description = (char *) jstr(msg, "description"),
        .changed = json_object_object_get_ex(msg, "changed", &v) && json_object_get_boolean(v),
        .error = jint(msg, "error"),
        .message = (char *) jstr(msg, "message"),
    };
    bool done = json_object_object_get_ex(msg, "done", &v) && json_object_get_boolean(v);
    w->cb.on_progress(w, jstr(msg, "volume"), &step, done, w->userdata);
}

static void on_result(Worker *w, json_object *msg) {
    json_object *v;
    w->got_result = true;
    w->error = jint(msg, "error");
    const char *m = jstr(msg, "message");
    free(w->message);
    w->message = m ? strdup(m) : NULL;
    if (json_object_object_get_ex(msg, "result", &v) && v && apply_result_from_json(v, &w->result) < 0)
        w->error = w->error ?: -EBADMSG;
    if (json_object_object_get_ex(msg, "observation", &v) && v && observation_from_json(v, &w->observation) < 0)
        w->error = w->error ?: -EBADMSG;
    if (json_object_object_get_ex(msg, "extra", &v) && v)
        w->extra = json_object_get(v);
}

static void on_line(Child *c, const char *line, void *userdata) {
    Worker *w = userdata;
    json_object *msg = json_tokener_parse(line);
    if (!msg) {
        /* Not the protocol: the worker is broken. It is told nothing more,
         * and its exit reports the failure. */
        child_kill(w->child, SIGKILL);
        return;
    }
    const char *type = jstr(msg, "type");
    if (streq_ptr(type, "save"))
        on_save(w, msg);
    else if (streq_ptr(type, "progress"))
        on_progress(w, msg);
    else if (streq_ptr(type, "result"))
        on_result(w, msg);
    else if (streq_ptr(type, "sample") && w->cb.on_sample)
        w->cb.on_sample(w, msg, w->userdata);
    json_object_put(msg);
}

static void on_exit_cb(Child *c, int status, const char *stderr_text, void *userdata) {
    Worker *w = userdata;
    int error = w->error;
    _cleanup_free_ char *why = NULL;
    if (!w->got_result) {
        error = -EPROTO;
        size_t n = strlen(stderr_text);
        while (n > 0 && stderr_text[n - 1] == '\n')
            n--;
        if (asprintf(&why, "the %s worker (pid %d) %s %d without an answer%s%.*s", w->op, (int) child_pid(c),
                     status < 0 ? "was killed by signal" : "exited with status", status < 0 ? -status : status,
                     n ? ": " : "", (int) n, stderr_text) < 0)
            why = NULL;
    }
    if (w->cb.on_done)
        w->cb.on_done(w, error, why ?: w->message, TAKE_PTR(w->result), TAKE_PTR(w->observation),
                      TAKE_PTR(w->extra), w->userdata);
}

int worker_start(sd_event *e, const char *exe, const WorkerRequest *req, const WorkerCallbacks *cb, void *userdata,
                 Worker **ret) {
    _cleanup_free_ char *yaml = NULL;
    int r;
    if (!e || !exe || !req || !req->op || !req->layout || !req->record || !ret)
        return -EINVAL;
    r = layout_to_yaml_string(req->layout, &yaml);
    if (r < 0)
        return r;
    json_object *rec = NULL;
    r = state_record_to_json(req->record, &rec);
    if (r < 0)
        return r;
    json_object *msg = json_object_new_object();
    if (!msg) {
        json_object_put(rec);
        return -ENOMEM;
    }
    json_object_object_add(msg, "op", json_object_new_string(req->op));
    json_object_object_add(msg, "layout", json_object_new_string(yaml));
    json_object_object_add(msg, "layout_source", req->layout->source ? json_object_new_string(req->layout->source)
                                                                     : NULL);
    json_object_object_add(msg, "record", rec);
    json_object_object_add(msg, "args", req->args ? json_object_get(req->args) : json_object_new_object());

    Worker *w = calloc(1, sizeof(*w));
    if (!w) {
        json_object_put(msg);
        return -ENOMEM;
    }
    if (cb)
        w->cb = *cb;
    w->userdata = userdata;
    w->op = strdup(req->op);
    char *argv[] = { (char *) exe, (char *) "--worker", NULL };
    ChildCallbacks ccb = { .on_line = on_line, .on_exit = on_exit_cb };
    r = w->op ? child_spawn(e, argv, &ccb, w, &w->child) : -ENOMEM;
    if (r < 0) {
        json_object_put(msg);
        worker_free(w);
        return r;
    }
    send_json(w, msg);
    json_object_put(msg);
    *ret = w;
    return 0;
}

pid_t worker_pid(const Worker *w) {
    return w ? child_pid(w->child) : 0;
}

const char *worker_op(const Worker *w) {
    return w ? w->op : NULL;
}

Worker *worker_free(Worker *w) {
    if (!w)
        return NULL;
    child_free(w->child);
    apply_result_free(w->result);
    observation_free(w->observation);
    json_object_put(w->extra);
    free(w->message);
    free(w->op);
    free(w);
    return NULL;
}

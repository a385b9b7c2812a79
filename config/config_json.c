/* The effective configuration as JSON, for `gpucache config` and reports.
 * Values are written in the units of the key so they can be pasted back. */
#include "config_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_json.h"

struct json_writer {
    char *out;
    size_t capacity;
    size_t length; /* what the whole text needs, even past `capacity` */
};

__attribute__((format(printf, 2, 3)))
static void emit(struct json_writer *writer, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    char *destination = NULL;
    size_t room = 0;
    if (writer->length < writer->capacity) {
        destination = writer->out + writer->length;
        room = writer->capacity - writer->length;
    }
    int needed = vsnprintf(destination, room, format, arguments);
    va_end(arguments);
    if (needed > 0)
        writer->length += (size_t)needed;
}

/* Shortest text that reads back as the same double, in the C locale so a
 * program's locale cannot turn the decimal point into a comma. */
static void emit_number(struct json_writer *writer, double value, const char *suffix)
{
    char text[40];
    locale_t previous = uselocale(config_c_locale());
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*g", precision, value);
        if (strtod(text, NULL) == value)
            break;
    }
    uselocale(previous);
    emit(writer, "%s%s", text, suffix);
}

static void emit_bytes(void *sink, const char *bytes, size_t length)
{
    emit(sink, "%.*s", (int)length, bytes);
}

static void emit_string(struct json_writer *writer, const char *text)
{
    gpucache_json_string(text, emit_bytes, writer);
}

static void emit_reserve(struct json_writer *writer, const struct gpucache_reserve *reserve)
{
    switch (reserve->kind) {
    case GPUCACHE_RESERVE_FRACTION:
        emit_number(writer, reserve->fraction, "");
        break;
    case GPUCACHE_RESERVE_BYTES:
        emit(writer, "\"");
        emit_number(writer, (double)reserve->bytes / (double)GIBIBYTE, "G\"");
        break;
    default:
        emit(writer, "null");
        break;
    }
}

/* Unset text (paths, the signal, the variable) is written as null. */
static void emit_optional_string(struct json_writer *writer, const char *text)
{
    if (text[0] == '\0')
        emit(writer, "null");
    else
        emit_string(writer, text);
}

static void emit_roundup_table(struct json_writer *writer, const uint32_t *divisions)
{
    /* Keyed by each bucket's lower bound in MiB, as PyTorch's snapshots. */
    emit(writer, "{");
    for (size_t i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        emit(writer, "%s\"%llu\": %u", i == 0 ? "" : ", ", 1ULL << i, divisions[i]);
    emit(writer, "}");
}

static const char *backend_name(enum gpucache_backend backend)
{
    return backend == GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC ? "cudaMallocAsync" : "native";
}

static const char *reuse_name(enum gpucache_reuse_mode reuse)
{
    return reuse == GPUCACHE_REUSE_CONSERVATIVE ? "conservative"
           : reuse == GPUCACHE_REUSE_RELAXED    ? "relaxed"
                                                : "async";
}

static void emit_value(struct json_writer *writer, const struct gpucache_config *config,
                       enum gpucache_config_key key)
{
    char signal[32];
    switch (key) {
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS: emit(writer, "%s", config->expandable_segments ? "true" : "false"); break;
    case GPUCACHE_KEY_MAX_SPLIT_SIZE_MB:
        if (config->max_split_size == UINT64_MAX)
            emit(writer, "null");
        else
            emit(writer, "%llu", (unsigned long long)(config->max_split_size / MEBIBYTE));
        break;
    case GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB:
        emit(writer, "%llu", (unsigned long long)(config->max_non_split_rounding / MEBIBYTE));
        break;
    case GPUCACHE_KEY_ROUNDUP_POWER2_DIVISIONS: emit_roundup_table(writer, config->roundup_power2_divisions); break;
    case GPUCACHE_KEY_GARBAGE_COLLECTION_THRESHOLD: emit_number(writer, config->garbage_collection_threshold, ""); break;
    case GPUCACHE_KEY_LARGE_SEGMENT_SIZE_MB:
        emit(writer, "%llu", (unsigned long long)(config->large_segment_size / MEBIBYTE));
        break;
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE: emit_reserve(writer, &config->expandable_segments_reserve); break;
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE_BY_CLASS:
        emit(writer, "{");
        for (size_t i = 0; i < config->reserve_class_count; i++) {
            emit(writer, "%s", i == 0 ? "" : ", ");
            emit_string(writer, config->reserve_classes[i].name);
            emit(writer, ": ");
            emit_reserve(writer, &config->reserve_classes[i].reserve);
        }
        emit(writer, "}");
        break;
    case GPUCACHE_KEY_PER_PROCESS_MEMORY_FRACTION: emit_number(writer, config->per_process_memory_fraction, ""); break;
    case GPUCACHE_KEY_THROW_ON_CUDAMALLOC_OOM: emit(writer, "%s", config->throw_on_cudamalloc_oom ? "true" : "false"); break;
    case GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC: emit(writer, "%s", config->release_lock_on_cudamalloc ? "true" : "false"); break;
    case GPUCACHE_KEY_BACKEND: emit(writer, "\"%s\"", backend_name(config->backend)); break;
    case GPUCACHE_KEY_GRAPH_CAPTURE_RECORD_STREAM_REUSE: emit(writer, "%s", config->graph_capture_record_stream_reuse ? "true" : "false"); break;
    case GPUCACHE_KEY_PINNED_USE_BACKGROUND_THREADS: emit(writer, "%s", config->pinned_use_background_threads ? "true" : "false"); break;
    case GPUCACHE_KEY_PINNED_USE_CUDA_HOST_REGISTER: emit(writer, "%s", config->pinned_use_cuda_host_register ? "true" : "false"); break;
    case GPUCACHE_KEY_PINNED_NUM_REGISTER_THREADS: emit(writer, "%u", config->pinned_num_register_threads); break;
    case GPUCACHE_KEY_PINNED_RESERVE_SEGMENT_SIZE_MB: emit(writer, "%llu", (unsigned long long)config->pinned_reserve_segment_size_mb); break;
    case GPUCACHE_KEY_PINNED_FREE_CATCH_ALL: emit(writer, "%s", config->pinned_free_catch_all ? "true" : "false"); break;
    case GPUCACHE_KEY_REUSE: emit(writer, "\"%s\"", reuse_name(config->reuse)); break;
    case GPUCACHE_KEY_PASSTHROUGH: emit(writer, "%s", config->passthrough ? "true" : "false"); break;
    case GPUCACHE_KEY_OOM_MESSAGE: emit(writer, "%s", config->oom_message ? "true" : "false"); break;
    case GPUCACHE_KEY_MEMINFO: emit(writer, "\"%s\"", config->meminfo == GPUCACHE_MEMINFO_RAW ? "raw" : "cache_as_free"); break;
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_SIZE_CLASS_MB:
        emit(writer, "%llu", (unsigned long long)(config->expandable_segments_size_class / MEBIBYTE));
        break;
    case GPUCACHE_KEY_REPORT: emit_optional_string(writer, config->report_path); break;
    case GPUCACHE_KEY_SUMMARY: emit_optional_string(writer, config->summary_path); break;
    case GPUCACHE_KEY_TRACE: emit_optional_string(writer, config->trace_path); break;
    case GPUCACHE_KEY_TRACE_CSV: emit_optional_string(writer, config->trace_csv_path); break;
    case GPUCACHE_KEY_SNAPSHOT: emit_optional_string(writer, config->snapshot_path); break;
    case GPUCACHE_KEY_SNAPSHOT_SIGNAL:
        gpucache_config_signal_name(config->snapshot_signal, signal, sizeof signal);
        emit_optional_string(writer, signal);
        break;
    default: emit(writer, "null"); break;
    }
}

size_t gpucache_config_to_json(const struct gpucache_config *config,
                               char *out, size_t capacity)
{
    struct json_writer writer = {.out = out, .capacity = capacity};
    if (capacity > 0)
        out[0] = '\0';
    emit(&writer, "{\n  \"variable\": ");
    emit_optional_string(&writer, config->source_variable != NULL ? config->source_variable : "");
    emit(&writer, ",\n  \"keys\": {\n");
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        enum gpucache_config_key key = (enum gpucache_config_key)index;
        emit(&writer, "    \"%s\": {\"value\": ", gpucache_config_key_name(key));
        emit_value(&writer, config, key);
        emit(&writer, ", \"source\": \"%s\"}%s\n",
             config->key_from_string[key] ? "string" : "default",
             index + 1 < GPUCACHE_KEY_COUNT ? "," : "");
    }
    emit(&writer, "  },\n  \"ignored\": [");
    bool first = true;
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        enum gpucache_config_key key = (enum gpucache_config_key)index;
        if (!gpucache_config_key_ignored(config, key))
            continue;
        emit(&writer, "%s\"%s\"", first ? "" : ", ", gpucache_config_key_name(key));
        first = false;
    }
    emit(&writer, "]\n}\n");
    return writer.length;
}

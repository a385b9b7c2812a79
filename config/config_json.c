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

static void emit_reserve_classes(struct json_writer *writer,
                                 const struct gpucache_config *config)
{
    emit(writer, "{");
    for (size_t i = 0; i < config->reserve_class_count; i++) {
        emit(writer, "%s", i == 0 ? "" : ", ");
        emit_string(writer, config->reserve_classes[i].name);
        emit(writer, ": ");
        emit_reserve(writer, &config->reserve_classes[i].reserve);
    }
    emit(writer, "}");
}

/* A choice outside its names (a struct filled by hand) prints as the first,
 * the default. */
static const char *choice_name(const struct config_value_limits *limits, int chosen)
{
    for (int i = 0; limits->choices[i] != NULL; i++) {
        if (i == chosen)
            return limits->choices[i];
    }
    return limits->choices[0];
}

/* Each kind's field type is the one config_keys.def gives it. */
static void emit_value(struct json_writer *writer, const struct gpucache_config *config,
                       const struct config_key_descriptor *key)
{
    const void *field = config_const_field(config, key);
    bool flag;
    uint64_t size;
    double fraction;
    uint32_t count;
    int number;
    char signal[32];
    switch (key->kind) {
    case CONFIG_KIND_BOOLEAN:
        memcpy(&flag, field, sizeof flag);
        emit(writer, "%s", flag ? "true" : "false");
        break;
    case CONFIG_KIND_MEBIBYTES:
        memcpy(&size, field, sizeof size);
        if (size == UINT64_MAX)
            emit(writer, "null");
        else
            emit(writer, "%llu", (unsigned long long)(key->limits.stored_in_mebibytes
                                                          ? size : size / MEBIBYTE));
        break;
    case CONFIG_KIND_FRACTION:
        memcpy(&fraction, field, sizeof fraction);
        emit_number(writer, fraction, "");
        break;
    case CONFIG_KIND_POWER_OF_TWO:
    case CONFIG_KIND_WHOLE_NUMBER:
        memcpy(&count, field, sizeof count);
        emit(writer, "%u", count);
        break;
    case CONFIG_KIND_CHOICE:
        memcpy(&number, field, sizeof number);
        emit(writer, "\"%s\"", choice_name(&key->limits, number));
        break;
    case CONFIG_KIND_PATH:
        emit_optional_string(writer, field);
        break;
    case CONFIG_KIND_SIGNAL:
        memcpy(&number, field, sizeof number);
        gpucache_config_signal_name(number, signal, sizeof signal);
        emit_optional_string(writer, signal);
        break;
    case CONFIG_KIND_ROUNDUP:
        emit_roundup_table(writer, field);
        break;
    case CONFIG_KIND_RESERVE:
        emit_reserve(writer, field);
        break;
    case CONFIG_KIND_RESERVE_BY_CLASS:
        emit_reserve_classes(writer, config);
        break;
    default:
        emit(writer, "null");
        break;
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
        emit_value(&writer, config, config_key_descriptor(key));
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

/* The JSON reader behind JSON snapshots: RFC 8259 values into the value
 * tree, escapes decoded, and one "byte N: problem" line for bad input. */
#include <criterion/criterion.h>
#include <string.h>

#include "json_reader.h"

static struct data_document document;

static void release(void)
{
    data_document_destroy(&document);
}

TestSuite(json_reader, .fini = release);

static const struct data_value *read_ok(const char *text)
{
    struct read_error error = {{0}};
    cr_assert(json_read(text, strlen(text), &document, &error), "%s", error.message);
    return document.root;
}

static void expect_error(const char *text, const char *message)
{
    struct read_error error = {{0}};
    cr_assert_not(json_read(text, strlen(text), &document, &error), "accepted: %s", text);
    cr_assert_str_eq(error.message, message);
    cr_assert_null(document.root);
}

Test(json_reader, reads_a_snapshot_shaped_object)
{
    const struct data_value *root =
        read_ok(" {\"device_traces\": [[{\"action\": \"alloc\", \"addr\": 139777059848192, "
                "\"size\": 512, \"stream\": 0, \"ok\": true, \"frames\": null}]], "
                "\"segments\": []}\n");
    cr_assert_eq(root->kind, DATA_DICT);
    const struct data_value *traces = data_dict_get(root, "device_traces");
    cr_assert_eq(traces->kind, DATA_LIST);
    const struct data_value *entry = traces->sequence.items[0]->sequence.items[0];
    cr_assert(data_string_is(data_dict_get(entry, "action"), "alloc"));
    cr_assert_eq(data_dict_get(entry, "addr")->integer, 139777059848192);
    cr_assert(data_dict_get(entry, "ok")->boolean);
    cr_assert_eq(data_dict_get(entry, "frames")->kind, DATA_NONE);
    cr_assert_eq(data_dict_get(root, "segments")->sequence.count, 0);
}

Test(json_reader, reads_numbers)
{
    const struct data_value *list =
        read_ok("[0, -7, 9223372036854775807, 9223372036854775808, 0.5, -2e3, 1E+2]");
    cr_assert_eq(list->sequence.count, 7);
    cr_assert_eq(list->sequence.items[1]->integer, -7);
    cr_assert_eq(list->sequence.items[2]->kind, DATA_INT);
    cr_assert_eq(list->sequence.items[2]->integer, INT64_MAX);
    cr_assert_eq(list->sequence.items[3]->kind, DATA_INT, "beyond 64 bits: still an int");
    cr_assert(list->sequence.items[3]->too_wide);
    cr_assert_not(list->sequence.items[2]->too_wide);
    cr_assert_float_eq(list->sequence.items[4]->real, 0.5, 0);
    cr_assert_float_eq(list->sequence.items[5]->real, -2000, 0);
    cr_assert_float_eq(list->sequence.items[6]->real, 100, 0);
}

Test(json_reader, keeps_integers_of_any_length)
{
    const struct data_value *list =
        read_ok("[18446744073709551615, -9223372036854775809, "
                "-123456789012345678901234567890123456789012345678901234567890123456789]");
    for (size_t index = 0; index < 3; index++) {
        cr_assert_eq(list->sequence.items[index]->kind, DATA_INT);
        cr_assert(list->sequence.items[index]->too_wide, "item %zu", index);
    }
}

Test(json_reader, decodes_escapes_including_surrogate_pairs)
{
    const struct data_value *list =
        read_ok("[\"plain\", \"a\\\"b\\\\c\\/d\\n\", \"\\u00e9\\u20ac\", \"\\ud83d\\ude00\"]");
    cr_assert(data_string_is(list->sequence.items[0], "plain"));
    cr_assert(data_string_is(list->sequence.items[1], "a\"b\\c/d\n"));
    cr_assert(data_string_is(list->sequence.items[2], "\xc3\xa9\xe2\x82\xac"));
    cr_assert(data_string_is(list->sequence.items[3], "\xf0\x9f\x98\x80"));
}

Test(json_reader, a_later_key_replaces_an_earlier_one)
{
    cr_assert_eq(data_dict_get(read_ok("{\"k\": 1, \"k\": 2}"), "k")->integer, 2);
}

Test(json_reader, accepts_a_byte_order_mark)
{
    cr_assert_eq(read_ok("\xEF\xBB\xBF{}")->kind, DATA_DICT);
}

Test(json_reader, rejects_malformed_text)
{
    expect_error("", "byte 0: expected a JSON value");
    expect_error("{\"a\": 1,}", "byte 8: expected a string key in an object");
    expect_error("{\"a\" 1}", "byte 5: expected ':' after an object key");
    expect_error("[1 2]", "byte 3: expected ',' or ']' in an array");
    expect_error("{\"a\": tru}", "byte 6: expected a JSON value");
    expect_error("[1.]", "byte 3: expected a digit after '.'");
    expect_error("{\"a\": \"b}", "byte 6: string without its closing quote");
    expect_error("[\"a\tb\"]", "byte 3: control character in a string (write it as an escape)");
    expect_error("[\"\\q\"]", "byte 2: invalid escape in a string (expected \\\" \\\\ \\/ \\b \\f "
                              "\\n \\r \\t or \\uXXXX)");
    expect_error("[\"\\u12\"]", "byte 2: \\u needs four hexadecimal digits");
    expect_error("[\"\\ud83d\"]", "byte 2: a high surrogate \\u escape without its low half");
    expect_error("{} {}", "byte 3: more text after the JSON value");
}

Test(json_reader, limits_nesting)
{
    char deep[200];
    memset(deep, '[', 100);
    deep[100] = '\0';
    expect_error(deep, "byte 64: nesting deeper than 64 levels");
}

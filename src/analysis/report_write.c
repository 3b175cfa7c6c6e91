/*
 * report_write.c — a report in the format asked for (report.h): the one place that knows
 * every writer, so the model (report_model.c) and the writers each stand on their own.
 */
#include "report.h"

int bd_report_write(const bd_report *r, bd_report_format fmt, char **out, size_t *len, bd_err *err)
{
    switch (fmt) {
    case BD_REPORT_JUNIT:
        return bd_report_junit(r, out, len, err);
    case BD_REPORT_MARKDOWN:
        return bd_report_markdown(r, out, len, err);
    case BD_REPORT_HTML:
    default:
        return bd_report_html(r, out, len, err);
    }
}

/*
 * progress.c: the progress bar of a build on a terminal, shared by
 * `git xlate build` and the first mount of xlatefs.
 */
#include "xlate.h"

#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void xlate_progress_init(struct xlate_progress *p, FILE *out)
{
	p->out = out;
	p->start = now();
	p->last = 0;
	p->shown = 0;
}

/* "Translating objects:  45% (58000/130037), 120000/s, ETA 1s", redrawn in place */
void xlate_progress_cb(void *data, uint64_t done, uint64_t total)
{
	struct xlate_progress *p = data;
	double t = now(), rate;

	if (!total || (t - p->last < 0.1 && done < total))
		return;
	if (!p->shown && done == total && t - p->start < 0.5)
		return;	/* too quick to be worth a bar */
	p->last = t;
	p->shown = 1;
	rate = t > p->start ? (double)done / (t - p->start) : 0;
	fprintf(p->out, "\rTranslating objects: %3d%% (%llu/%llu), %.0f/s",
		(int)(100 * done / total), (unsigned long long)done,
		(unsigned long long)total, rate);
	if (done == total)
		fputs(", done.      ", p->out);
	else if (rate > 0)
		fprintf(p->out, ", ETA %.0fs   ", (double)(total - done) / rate);
	else
		fputs("            ", p->out);
	fflush(p->out);
}

void xlate_progress_end(struct xlate_progress *p)
{
	if (p->shown)
		fputc('\n', p->out);
	p->shown = 0;
}

"""Two btree indexes that give a transcript search the first rows of a source in id order without reading their
text: by benchmark and source, and by run and source (runs.search._prefix_ids). Text common enough to fill a
page among a source's first rows is then answered from those rows alone, instead of after 150 ms of trigram
candidates (docs/performance.md, "Search every transcript"). About 40 bytes a row each (61 MB at 1.5M rows).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0013_search_text_joined_trigrams'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='searchtext',
            index=models.Index(fields=['benchmark', 'source', 'id'], name='search_text_walk'),
        ),
        migrations.AddIndex(
            model_name='searchtext',
            index=models.Index(fields=['run', 'source', 'id'], name='search_text_run_walk'),
        ),
    ]

"""The help documents read model: the list table (keyset on `id`) and the lexical indexes.

`title_folded` is the lower-cased, unaccented title the plain-text title search matches; `lexemes` is
the full-text vector of title (weight A) and content (weight B) that the hybrid search ranks by,
built with the text-search configuration of the document's language.
"""

from __future__ import annotations

from events import types as ev
from projections.handlers import ReadModel

DDL = """
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE TABLE IF NOT EXISTS rm_documents (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, title text NOT NULL,
    locale text NOT NULL, category text, published boolean NOT NULL, content text NOT NULL, source text,
    created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    title_folded text NOT NULL, lexemes tsvector NOT NULL);
CREATE INDEX IF NOT EXISTS rm_documents_org ON rm_documents (org_id, id);
CREATE INDEX IF NOT EXISTS rm_documents_website ON rm_documents (org_id, website_id, id);
CREATE INDEX IF NOT EXISTS rm_documents_lexemes ON rm_documents USING gin (lexemes);
-- A tsvector holds at most 1 MB of lexemes, which a document of many distinct words (say 300,000
-- characters of Chinese) passes: it would fail the batch, and every later one, for every read model
-- sharing the transaction. Such a document is searched by as much of its content as fits.
CREATE OR REPLACE FUNCTION rm_document_lexemes(config regconfig, title text, content text) RETURNS tsvector
LANGUAGE plpgsql STABLE AS $$
DECLARE
    indexed integer := length(content);
BEGIN
    LOOP
        BEGIN
            RETURN setweight(to_tsvector(config, unaccent(title)), 'A')
                || setweight(to_tsvector(config, unaccent(left(content, indexed))), 'B');
        EXCEPTION WHEN program_limit_exceeded THEN
            indexed := indexed / 2;
        END;
    END LOOP;
END $$;
"""

# Languages whose stemming PostgreSQL ships; any other locale is indexed word for word.
TEXT_SEARCH_CONFIGS = {
    "ar": "arabic", "da": "danish", "de": "german", "el": "greek", "en": "english", "es": "spanish",
    "fi": "finnish", "fr": "french", "hu": "hungarian", "id": "indonesian", "it": "italian", "nl": "dutch",
    "no": "norwegian", "nb": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian",
    "sv": "swedish", "tr": "turkish",
}


def text_search_config(locale: str) -> str:
    return TEXT_SEARCH_CONFIGS.get(locale.replace("_", "-").split("-")[0].lower(), "simple")


LEXEMES = "rm_document_lexemes(%(config)s::regconfig, %(title)s, %(content)s)"


def _row(e: ev.DocumentState) -> dict:
    return {"id": e.document_id, "org": e.org_id, "website": e.website_id, "title": e.title, "locale": e.locale,
            "category": e.category, "published": e.published, "content": e.content, "at": e.at,
            "config": text_search_config(e.locale)}


async def _created(conn, e: ev.DocumentCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_documents (id, org_id, website_id, title, locale, category, published, content, "
        "source, created_at, updated_at, title_folded, lexemes) "
        "VALUES (%(id)s, %(org)s, %(website)s, %(title)s, %(locale)s, %(category)s, %(published)s, "
        "%(content)s, %(source)s, %(at)s, %(at)s, lower(unaccent(%(title)s)), " + LEXEMES + ") "
        "ON CONFLICT DO NOTHING", _row(e) | {"source": e.source})


async def _updated(conn, e: ev.DocumentUpdated) -> None:
    await conn.execute(
        "UPDATE rm_documents SET title = %(title)s, locale = %(locale)s, category = %(category)s, "
        "published = %(published)s, content = %(content)s, updated_at = %(at)s, "
        "title_folded = lower(unaccent(%(title)s)), lexemes = " + LEXEMES + " WHERE id = %(id)s", _row(e))


async def _deleted(conn, e: ev.DocumentDeleted) -> None:
    await conn.execute("DELETE FROM rm_documents WHERE id = %s", (e.document_id,))


class DocumentsProjection(ReadModel):
    name, ddl, tables = "documents", DDL, ("rm_documents",)
    functions = ("rm_document_lexemes(regconfig, text, text)",)
    handlers = {ev.DocumentCreated: _created, ev.DocumentUpdated: _updated, ev.DocumentDeleted: _deleted}

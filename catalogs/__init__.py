"""The generated catalogs (JSON Schemas, the pipeline catalog, the flow model), shipped as
package data of ``dsh_conformance.catalogs``: nothing to import here."""

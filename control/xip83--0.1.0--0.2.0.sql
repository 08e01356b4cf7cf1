-- xip83 0.1.0 -> 0.2.0: ALTER EXTENSION xip83 UPDATE TO '0.2.0'.
-- What a fresh 0.2.0 installs (control/install/*.sql) and what this script
-- leaves behind are compared object by object by the upgrade test.
\echo Use "ALTER EXTENSION xip83 UPDATE TO '0.2.0'" to load this file. \quit

// @generated from GET /api/v1/openapi.json by `npm run generate -w herald-sdk`; do not edit by hand.
// test/openapi-drift.test.ts fails when the served document and this file differ.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness and database health */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "status": "ok"
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            status: "ok";
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The database is unavailable (service_unavailable) or its disk is full (storage_full); nothing was saved, retry after Retry-After seconds */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "service_unavailable",
                         *         "message": "The database is unavailable",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This API as an OpenAPI 3 document */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The OpenAPI 3 document of this API (also shown as a page at /docs) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "openapi": "3.0.3",
                         *       "info": {
                         *         "title": "Herald API",
                         *         "version": "1.0.0"
                         *       },
                         *       "paths": {}
                         *     }
                         */
                        "application/json": {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/dev/bootstrap": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Development only: create an organization with a Test and a Live key */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "name": "Acme Inc."
                     *     }
                     */
                    "application/json": {
                        name?: string;
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "bootstrap",
                         *       "organization": {
                         *         "id": "org_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *         "name": "Acme Inc.",
                         *         "plan": "starter"
                         *       },
                         *       "test_key": {
                         *         "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *         "object": "api_key",
                         *         "name": "Test key",
                         *         "prefix": "sk_test_",
                         *         "livemode": false,
                         *         "created_at": "2026-01-01T00:00:00.000Z",
                         *         "revoked_at": null,
                         *         "key": "sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ"
                         *       },
                         *       "live_key": {
                         *         "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6x",
                         *         "object": "api_key",
                         *         "name": "Live key",
                         *         "prefix": "sk_live_",
                         *         "livemode": true,
                         *         "created_at": "2026-01-01T00:00:00.000Z",
                         *         "revoked_at": null,
                         *         "key": "sk_live_9fD27KsPqWmXnB3vT6yH8cJ1rL5eZ0aU"
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "bootstrap";
                            organization: {
                                id: string;
                                name: string;
                                plan: string;
                            };
                            /**
                             * @example {
                             *       "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                             *       "object": "api_key",
                             *       "name": "CI key",
                             *       "prefix": "sk_test_",
                             *       "livemode": false,
                             *       "role": "emitter",
                             *       "app_ids": [
                             *         "app_01jd5x3k8m2n4p6q8r0s2t4v6w"
                             *       ],
                             *       "expires_at": null,
                             *       "created_at": "2026-01-01T00:00:00.000Z",
                             *       "revoked_at": null,
                             *       "key": "sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ"
                             *     }
                             */
                            test_key: {
                                /** @description key_… */
                                id: string;
                                /** @enum {string} */
                                object: "api_key";
                                name: string;
                                prefix: "sk_test_" | "sk_live_";
                                livemode: boolean;
                                /** @description What the key may do: admin (everything), writer, reader or emitter */
                                role: "admin" | "writer" | "reader" | "emitter";
                                /** @description The applications (app_… ids) the key acts on; null: every application */
                                app_ids: string[] | null;
                                /** Format: date-time */
                                expires_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                revoked_at: string | null;
                                /** @description The key in plaintext, shown once */
                                key: string;
                            };
                            /**
                             * @example {
                             *       "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                             *       "object": "api_key",
                             *       "name": "CI key",
                             *       "prefix": "sk_test_",
                             *       "livemode": false,
                             *       "role": "emitter",
                             *       "app_ids": [
                             *         "app_01jd5x3k8m2n4p6q8r0s2t4v6w"
                             *       ],
                             *       "expires_at": null,
                             *       "created_at": "2026-01-01T00:00:00.000Z",
                             *       "revoked_at": null,
                             *       "key": "sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ"
                             *     }
                             */
                            live_key: {
                                /** @description key_… */
                                id: string;
                                /** @enum {string} */
                                object: "api_key";
                                name: string;
                                prefix: "sk_test_" | "sk_live_";
                                livemode: boolean;
                                /** @description What the key may do: admin (everything), writer, reader or emitter */
                                role: "admin" | "writer" | "reader" | "emitter";
                                /** @description The applications (app_… ids) the key acts on; null: every application */
                                app_ids: string[] | null;
                                /** Format: date-time */
                                expires_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                revoked_at: string | null;
                                /** @description The key in plaintext, shown once */
                                key: string;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List recent messages, newest first */
        get: {
            parameters: {
                query?: {
                    /** @description At most 50 (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an evt_… id) */
                    cursor?: string;
                    app_id?: string;
                    event_type?: string;
                    channel?: string;
                    tag?: string;
                    /** @description Created at or after this time */
                    since?: string;
                    /** @description Created before this time */
                    until?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "message",
                         *           "event_type": "invoice.paid",
                         *           "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "channels": [],
                         *           "tags": [
                         *             "region-eu"
                         *           ],
                         *           "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                         *           "deliver_at": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description evt_… */
                                id: string;
                                /** @enum {string} */
                                object: "message";
                                event_type: string;
                                app_id: string;
                                /** @description Routing channels (empty: none) */
                                channels: string[];
                                /** @description Labels, for lists (tag=) */
                                tags: string[];
                                /** @description The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id */
                                trace_id: string;
                                /**
                                 * Format: date-time
                                 * @description When its deliveries' first attempts are due, as the emit asked; null: sent at once
                                 */
                                deliver_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Emit a message to every subscribed endpoint of an application */
        post: {
            parameters: {
                query?: never;
                header?: {
                    /**
                     * @description Your key for this emit (an order id, say): a repeat with the same key within HERALD_IDEMPOTENCY_TTL (24 h) creates nothing and answers 200 with the first emit's message and delivery_ids. The header wins over the body field
                     * @example order-1001
                     */
                    "idempotency-key"?: string;
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "app_id": "acme",
                     *       "event_type": "invoice.paid",
                     *       "payload": {
                     *         "invoice_id": "inv_1001",
                     *         "amount": 4200,
                     *         "currency": "usd"
                     *       },
                     *       "tags": [
                     *         "region-eu"
                     *       ]
                     *     }
                     */
                    "application/json": {
                        /** @description The application: its app_… id or its uid */
                        app_id: string;
                        event_type: string;
                        /** @description Free-form JSON object delivered to receivers as `data` */
                        payload: {
                            [key: string]: unknown;
                        };
                        /**
                         * @description Your key for this emit (an order id, say): a repeat with the same key within HERALD_IDEMPOTENCY_TTL (24 h) creates nothing and answers 200 with the first emit's message and delivery_ids. The header wins over the body field
                         * @example order-1001
                         */
                        idempotency_key?: string;
                        channels?: string[];
                        tags?: string[];
                        /**
                         * Format: date-time
                         * @description Hold the deliveries' first attempts until this time (at most HERALD_MAX_DELIVER_AHEAD ahead, 7d by default); absent or past: at once. Replays and retries go at once
                         */
                        deliver_at?: string;
                    };
                };
            };
            responses: {
                /** @description Idempotent repeat: the earlier answer to this idempotency-key (idempotent: true); nothing new was created */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "message",
                         *       "event_type": "invoice.paid",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "channels": [],
                         *       "tags": [
                         *         "region-eu"
                         *       ],
                         *       "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                         *       "deliver_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "delivery_ids": [
                         *         "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       ],
                         *       "idempotent": true
                         *     }
                         */
                        "application/json": {
                            /** @description evt_… */
                            id: string;
                            /** @enum {string} */
                            object: "message";
                            event_type: string;
                            app_id: string;
                            /** @description Routing channels (empty: none) */
                            channels: string[];
                            /** @description Labels, for lists (tag=) */
                            tags: string[];
                            /** @description The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id */
                            trace_id: string;
                            /**
                             * Format: date-time
                             * @description When its deliveries' first attempts are due, as the emit asked; null: sent at once
                             */
                            deliver_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                            delivery_ids: string[];
                            idempotent: boolean;
                        };
                    };
                };
                /** @description Created: the message is stored and its deliveries are queued */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "message",
                         *       "event_type": "invoice.paid",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "channels": [],
                         *       "tags": [
                         *         "region-eu"
                         *       ],
                         *       "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                         *       "deliver_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "delivery_ids": [
                         *         "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       ],
                         *       "idempotent": false
                         *     }
                         */
                        "application/json": {
                            /** @description evt_… */
                            id: string;
                            /** @enum {string} */
                            object: "message";
                            event_type: string;
                            app_id: string;
                            /** @description Routing channels (empty: none) */
                            channels: string[];
                            /** @description Labels, for lists (tag=) */
                            tags: string[];
                            /** @description The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id */
                            trace_id: string;
                            /**
                             * Format: date-time
                             * @description When its deliveries' first attempts are due, as the emit asked; null: sent at once
                             */
                            deliver_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                            delivery_ids: string[];
                            idempotent: boolean;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages/send-test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Emit a sample event through the real pipeline (Test mode only) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "app_id": "acme",
                     *       "event_type": "invoice.paid"
                     *     }
                     */
                    "application/json": {
                        app_id: string;
                        event_type?: string;
                        /** @description Free-form JSON object delivered to receivers as `data` */
                        payload?: {
                            [key: string]: unknown;
                        };
                    };
                };
            };
            responses: {
                /** @description Accepted: the work is queued and done in the background */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "message",
                         *       "status": "accepted",
                         *       "event_type": "invoice.paid",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "delivery_ids": [
                         *         "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       ],
                         *       "note": "Sample event sent with the catalog example payload"
                         *     }
                         */
                        "application/json": {
                            id: string;
                            /** @enum {string} */
                            object: "message";
                            /** @enum {string} */
                            status: "accepted";
                            event_type: string;
                            app_id: string;
                            delivery_ids: string[];
                            note: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Message metadata (never the payload) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "message",
                         *       "event_type": "invoice.paid",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "channels": [],
                         *       "tags": [
                         *         "region-eu"
                         *       ],
                         *       "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                         *       "deliver_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description evt_… */
                            id: string;
                            /** @enum {string} */
                            object: "message";
                            event_type: string;
                            app_id: string;
                            /** @description Routing channels (empty: none) */
                            channels: string[];
                            /** @description Labels, for lists (tag=) */
                            tags: string[];
                            /** @description The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id */
                            trace_id: string;
                            /**
                             * Format: date-time
                             * @description When its deliveries' first attempts are due, as the emit asked; null: sent at once
                             */
                            deliver_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages/{id}/payload": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A message's stored payload, as receivers get it in `data`
         * @description Message reads carry metadata only; this reads the payload on demand. 410 payload_gone when the message is still stored but its payload is not (expunged, past its own retention, or purged).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "message_payload",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "event_type": "invoice.paid",
                         *       "payload": {
                         *         "invoice_id": "inv_1001",
                         *         "amount": 4200,
                         *         "currency": "usd"
                         *       },
                         *       "created_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description evt_… */
                            id: string;
                            /** @enum {string} */
                            object: "message_payload";
                            app_id: string;
                            event_type: string;
                            /** @description The payload as emitted: what receivers get as `data` */
                            payload: {
                                [key: string]: unknown;
                            };
                            /** Format: date-time */
                            created_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The message exists but its payload is gone: expunged, past its own retention, or purged after HERALD_RETENTION */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_gone",
                         *         "message": "the payload of message evt_01jd5x3k8m2n4p6q8r0s2t4v6w is no longer stored",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages/{id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Replay a message: new deliveries for the endpoints subscribed now */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "message_id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "delivery_ids": [
                         *         "dlv_01jd5x3k8m2n4p6q8r0s2t4v7a",
                         *         "dlv_01jd5x3k8m2n4p6q8r0s2t4v7b"
                         *       ],
                         *       "status": "enqueued"
                         *     }
                         */
                        "application/json": {
                            message_id: string;
                            delivery_ids: string[];
                            /** @enum {string} */
                            status: "enqueued";
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/messages/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a message's deliveries */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an dlv_… id) */
                    cursor?: string;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "delivery",
                         *           "message_id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "endpoint_id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "event_type": "invoice.paid",
                         *           "status": "success",
                         *           "attempt_count": 1,
                         *           "next_attempt_at": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description dlv_… */
                                id: string;
                                /** @enum {string} */
                                object: "delivery";
                                message_id: string;
                                endpoint_id: string;
                                /** @description The message's event type; null once the message is no longer stored */
                                event_type: string | null;
                                status: "pending" | "success" | "failed" | "disabled";
                                attempt_count: number;
                                /** Format: date-time */
                                next_attempt_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/applications": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List applications */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an app_… id) */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "application",
                         *           "name": "Acme Inc.",
                         *           "uid": "acme",
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description app_… */
                                id: string;
                                /** @enum {string} */
                                object: "application";
                                name: string;
                                uid: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create an application */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "name": "Acme Inc.",
                     *       "uid": "acme"
                     *     }
                     */
                    "application/json": {
                        name: string;
                        /** @description Your stable id for this application (not starting with app_) */
                        uid?: string;
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "application",
                         *       "name": "Acme Inc.",
                         *       "uid": "acme",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "portal_path": "/portal/pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O"
                         *     }
                         */
                        "application/json": {
                            /** @description app_… */
                            id: string;
                            /** @enum {string} */
                            object: "application";
                            name: string;
                            uid: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            /** @description Path of this application’s customer portal, relative to the base URL; shown only now (only its hash is stored) */
                            portal_path: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/applications/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an application by id or uid */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "application",
                         *       "name": "Acme Inc.",
                         *       "uid": "acme",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description app_… */
                            id: string;
                            /** @enum {string} */
                            object: "application";
                            name: string;
                            uid: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete an application and its endpoints */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Done; no body */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /** Update an application */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "name": "Acme Corporation"
                     *     }
                     */
                    "application/json": {
                        name?: string;
                        /** @description Your stable id for this application (not starting with app_) */
                        uid?: string | null;
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "application",
                         *       "name": "Acme Inc.",
                         *       "uid": "acme",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description app_… */
                            id: string;
                            /** @enum {string} */
                            object: "application";
                            name: string;
                            uid: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/api/v1/applications/{id}/rotate-portal-path": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Give the application a new portal_path; the previous one and every link app-portal-access made stop working at once */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "application",
                         *       "name": "Acme Inc.",
                         *       "uid": "acme",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "portal_path": "/portal/pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O"
                         *     }
                         */
                        "application/json": {
                            /** @description app_… */
                            id: string;
                            /** @enum {string} */
                            object: "application";
                            name: string;
                            uid: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            /** @description Path of this application’s customer portal, relative to the base URL; shown only now (only its hash is stored) */
                            portal_path: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List endpoints */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an ep_… id) */
                    cursor?: string;
                    app_id?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "endpoint",
                         *           "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "uid": "billing",
                         *           "url": "https://acme.example/webhooks",
                         *           "status": "active",
                         *           "event_types": [
                         *             "invoice.paid"
                         *           ],
                         *           "channels": [],
                         *           "filter": {
                         *             "data.amount": {
                         *               "$gte": 1000
                         *             }
                         *           },
                         *           "description": "Billing receiver",
                         *           "headers": {
                         *             "Authorization": "<redacted>",
                         *             "X-Tenant": "acme"
                         *           },
                         *           "sensitive_headers": [
                         *             "Authorization"
                         *           ],
                         *           "rate_limit": 50,
                         *           "retry_schedule": null,
                         *           "circuit": null,
                         *           "circuit_state": "closed",
                         *           "circuit_open_until": null,
                         *           "ordering": "unordered",
                         *           "signature_type": "hmac",
                         *           "public_key": null,
                         *           "tls": null,
                         *           "auth": {
                         *             "type": "oauth2_client_credentials",
                         *             "token_url": "https://auth.acme.example/oauth/token",
                         *             "client_id": "herald",
                         *             "client_secret": "<redacted>",
                         *             "scope": "webhooks:write",
                         *             "audience": null,
                         *             "client_auth": "basic"
                         *           },
                         *           "type": "http",
                         *           "config": null,
                         *           "transformation": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description ep_… */
                                id: string;
                                /** @enum {string} */
                                object: "endpoint";
                                app_id: string;
                                /** @description Your stable id for the endpoint, unique in its application */
                                uid: string | null;
                                /** Format: uri */
                                url: string;
                                status: "active" | "disabled" | "failing";
                                event_types: string[];
                                /** @description Receives only messages sharing one of these channels; empty: every message */
                                channels: string[];
                                /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                                filter: {
                                    [key: string]: unknown;
                                } | null;
                                description: string;
                                /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                                headers: {
                                    [key: string]: string;
                                };
                                /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                                sensitive_headers: string[];
                                /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                                rate_limit: number | null;
                                /**
                                 * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                                 * @example [
                                 *       "0s",
                                 *       "30s",
                                 *       "5m",
                                 *       "1h"
                                 *     ]
                                 */
                                retry_schedule: string[] | null;
                                circuit: ({
                                    /** @enum {boolean} */
                                    enabled: false;
                                } | {
                                    /** @enum {boolean} */
                                    enabled?: true;
                                    /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                    failure_ratio?: number;
                                    /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                    min_attempts?: number;
                                    /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                    window?: string;
                                    /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                    cooldown?: string;
                                }) | (never | null);
                                /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                                circuit_state: "closed" | "open" | "half_open";
                                /**
                                 * Format: date-time
                                 * @description While open: when the probe may go
                                 */
                                circuit_open_until: string | null;
                                /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                                ordering: "unordered" | "fifo";
                                /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                                signature_type: "hmac" | "ed25519";
                                /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                                public_key: string | null;
                                /** @description TLS settings (mutual TLS, private CA); null: none */
                                tls: {
                                    client_cert: string | null;
                                    /** @description "<redacted>" when set */
                                    client_key: string | null;
                                    ca: string | null;
                                    /**
                                     * Format: date-time
                                     * @description The client certificate's expiry
                                     */
                                    client_cert_not_after: string | null;
                                } | null;
                                /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                                auth: {
                                    /** @enum {string} */
                                    type: "oauth2_client_credentials";
                                    token_url: string;
                                    client_id: string;
                                    /** @description Always "<redacted>" */
                                    client_secret: string;
                                    scope: string | null;
                                    audience: string | null;
                                    client_auth: "basic" | "post";
                                } | null;
                                /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                                type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                                /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                                config: {
                                    [key: string]: unknown;
                                } | null;
                                /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                                transformation: {
                                    code: string | null;
                                    enabled: boolean;
                                    /** Format: date-time */
                                    updated_at: string;
                                } | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create an endpoint (the signing secret is returned once) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "app_id": "acme",
                     *       "url": "https://acme.example/webhooks",
                     *       "description": "Billing receiver",
                     *       "event_types": [
                     *         "invoice.paid"
                     *       ],
                     *       "headers": {
                     *         "X-Tenant": "acme"
                     *       },
                     *       "rate_limit": 50,
                     *       "uid": "billing"
                     *     }
                     */
                    "application/json": {
                        app_id: string;
                        /** @description Receiver URL; https in Live mode. For a destination, the broker's or bucket's address */
                        url: string;
                        description?: string;
                        /** @description Event types to receive; omitted or empty receives every event type */
                        event_types?: string[];
                        /** @description Headers sent with every request to the endpoint (at most 20; reserved names refused). An update replaces the whole set; a sensitive value sent back as "<redacted>" keeps the stored one */
                        headers?: {
                            [key: string]: string;
                        };
                        /** @description Names of `headers` whose values reads show as "<redacted>" (they are still sent as set), beside those that look like credentials. An update that gives it replaces the marks; one that leaves it out keeps the marks of the headers still there. Names not among the headers are ignored */
                        sensitive_headers?: string[];
                        /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                        signature_type?: "hmac" | "ed25519";
                        /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                        rate_limit?: number | null;
                        /**
                         * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                         * @example [
                         *       "0s",
                         *       "30s",
                         *       "5m",
                         *       "1h"
                         *     ]
                         */
                        retry_schedule?: string[] | null;
                        circuit?: ({
                            /** @enum {boolean} */
                            enabled: false;
                        } | {
                            /** @enum {boolean} */
                            enabled?: true;
                            /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                            failure_ratio?: number;
                            /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                            min_attempts?: number;
                            /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                            window?: string;
                            /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                            cooldown?: string;
                        }) | (never | null);
                        /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                        ordering?: "unordered" | "fifo";
                        /** @description Your stable id for this endpoint in its application (not starting with ep_) */
                        uid?: string;
                        channels?: string[];
                        /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                        filter?: {
                            [key: string]: unknown;
                        } | null;
                        /** @description TLS settings for https receivers: client_cert and client_key together (mutual TLS), ca for a private CA. An update replaces the whole object; null removes it */
                        tls?: {
                            /** @description Client certificate (PEM; its chain may follow), sent to receivers that demand mutual TLS */
                            client_cert?: string | null;
                            /** @description Its private key (PEM, unencrypted; sealed at rest). "<redacted>" keeps the stored one */
                            client_key?: string | null;
                            /** @description CA certificates (PEM) that replace the default roots for the receiver's certificate */
                            ca?: string | null;
                        } | null;
                        /** @description OAuth2 client credentials: every request carries a bearer token from token_url (cached until shortly before it expires; a 401 fetches a new one once). null removes it */
                        auth?: {
                            /** @enum {string} */
                            type: "oauth2_client_credentials";
                            /** @description The token server's URL; the endpoint URL's rules apply (https in Live mode, public addresses) */
                            token_url: string;
                            client_id: string;
                            /** @description Sealed at rest, read back as "<redacted>"; "<redacted>" in an update keeps the stored one */
                            client_secret: string;
                            scope?: string | null;
                            audience?: string | null;
                            /** @description basic (default): client_secret_basic; post: the id and secret in the form body */
                            client_auth?: "basic" | "post";
                        } | null;
                        /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                        type?: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                        /** @description A destination's settings by its type (docs/destinations.md); secrets sent back as "<redacted>" keep the stored ones. Not for http */
                        config?: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * @description A field left out keeps its value; code is checked (it must compile and define handler)
                         * @example {
                         *       "code": "function handler(webhook) {\n  webhook.payload = { text: webhook.eventType + \": \" + webhook.payload.data.invoice_id };\n  return webhook;\n}",
                         *       "enabled": true
                         *     }
                         */
                        transformation?: {
                            /** @description JavaScript that defines `function handler(webhook)` and returns the webhook changed; null: none */
                            code?: string | null;
                            /** @description Whether it runs on every attempt (default: true when code is given) */
                            enabled?: boolean;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "endpoint",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "uid": "billing",
                         *       "url": "https://acme.example/webhooks",
                         *       "status": "active",
                         *       "event_types": [
                         *         "invoice.paid"
                         *       ],
                         *       "channels": [],
                         *       "filter": {
                         *         "data.amount": {
                         *           "$gte": 1000
                         *         }
                         *       },
                         *       "description": "Billing receiver",
                         *       "headers": {
                         *         "Authorization": "<redacted>",
                         *         "X-Tenant": "acme"
                         *       },
                         *       "sensitive_headers": [
                         *         "Authorization"
                         *       ],
                         *       "rate_limit": 50,
                         *       "retry_schedule": null,
                         *       "circuit": null,
                         *       "circuit_state": "closed",
                         *       "circuit_open_until": null,
                         *       "ordering": "unordered",
                         *       "signature_type": "hmac",
                         *       "public_key": null,
                         *       "tls": null,
                         *       "auth": {
                         *         "type": "oauth2_client_credentials",
                         *         "token_url": "https://auth.acme.example/oauth/token",
                         *         "client_id": "herald",
                         *         "client_secret": "<redacted>",
                         *         "scope": "webhooks:write",
                         *         "audience": null,
                         *         "client_auth": "basic"
                         *       },
                         *       "type": "http",
                         *       "config": null,
                         *       "transformation": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
                         *     }
                         */
                        "application/json": {
                            /** @description ep_… */
                            id: string;
                            /** @enum {string} */
                            object: "endpoint";
                            app_id: string;
                            /** @description Your stable id for the endpoint, unique in its application */
                            uid: string | null;
                            /** Format: uri */
                            url: string;
                            status: "active" | "disabled" | "failing";
                            event_types: string[];
                            /** @description Receives only messages sharing one of these channels; empty: every message */
                            channels: string[];
                            /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                            filter: {
                                [key: string]: unknown;
                            } | null;
                            description: string;
                            /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                            sensitive_headers: string[];
                            /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                            rate_limit: number | null;
                            /**
                             * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                             * @example [
                             *       "0s",
                             *       "30s",
                             *       "5m",
                             *       "1h"
                             *     ]
                             */
                            retry_schedule: string[] | null;
                            circuit: ({
                                /** @enum {boolean} */
                                enabled: false;
                            } | {
                                /** @enum {boolean} */
                                enabled?: true;
                                /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                failure_ratio?: number;
                                /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                min_attempts?: number;
                                /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                window?: string;
                                /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                cooldown?: string;
                            }) | (never | null);
                            /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                            circuit_state: "closed" | "open" | "half_open";
                            /**
                             * Format: date-time
                             * @description While open: when the probe may go
                             */
                            circuit_open_until: string | null;
                            /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                            ordering: "unordered" | "fifo";
                            /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                            signature_type: "hmac" | "ed25519";
                            /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                            public_key: string | null;
                            /** @description TLS settings (mutual TLS, private CA); null: none */
                            tls: {
                                client_cert: string | null;
                                /** @description "<redacted>" when set */
                                client_key: string | null;
                                ca: string | null;
                                /**
                                 * Format: date-time
                                 * @description The client certificate's expiry
                                 */
                                client_cert_not_after: string | null;
                            } | null;
                            /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                            auth: {
                                /** @enum {string} */
                                type: "oauth2_client_credentials";
                                token_url: string;
                                client_id: string;
                                /** @description Always "<redacted>" */
                                client_secret: string;
                                scope: string | null;
                                audience: string | null;
                                client_auth: "basic" | "post";
                            } | null;
                            /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                            type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                            /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                            config: {
                                [key: string]: unknown;
                            } | null;
                            /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                            transformation: {
                                code: string | null;
                                enabled: boolean;
                                /** Format: date-time */
                                updated_at: string;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            /** @description hmac endpoints: whsec_…, shown once */
                            signing_secret?: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an endpoint */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "endpoint",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "uid": "billing",
                         *       "url": "https://acme.example/webhooks",
                         *       "status": "active",
                         *       "event_types": [
                         *         "invoice.paid"
                         *       ],
                         *       "channels": [],
                         *       "filter": {
                         *         "data.amount": {
                         *           "$gte": 1000
                         *         }
                         *       },
                         *       "description": "Billing receiver",
                         *       "headers": {
                         *         "Authorization": "<redacted>",
                         *         "X-Tenant": "acme"
                         *       },
                         *       "sensitive_headers": [
                         *         "Authorization"
                         *       ],
                         *       "rate_limit": 50,
                         *       "retry_schedule": null,
                         *       "circuit": null,
                         *       "circuit_state": "closed",
                         *       "circuit_open_until": null,
                         *       "ordering": "unordered",
                         *       "signature_type": "hmac",
                         *       "public_key": null,
                         *       "tls": null,
                         *       "auth": {
                         *         "type": "oauth2_client_credentials",
                         *         "token_url": "https://auth.acme.example/oauth/token",
                         *         "client_id": "herald",
                         *         "client_secret": "<redacted>",
                         *         "scope": "webhooks:write",
                         *         "audience": null,
                         *         "client_auth": "basic"
                         *       },
                         *       "type": "http",
                         *       "config": null,
                         *       "transformation": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description ep_… */
                            id: string;
                            /** @enum {string} */
                            object: "endpoint";
                            app_id: string;
                            /** @description Your stable id for the endpoint, unique in its application */
                            uid: string | null;
                            /** Format: uri */
                            url: string;
                            status: "active" | "disabled" | "failing";
                            event_types: string[];
                            /** @description Receives only messages sharing one of these channels; empty: every message */
                            channels: string[];
                            /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                            filter: {
                                [key: string]: unknown;
                            } | null;
                            description: string;
                            /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                            sensitive_headers: string[];
                            /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                            rate_limit: number | null;
                            /**
                             * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                             * @example [
                             *       "0s",
                             *       "30s",
                             *       "5m",
                             *       "1h"
                             *     ]
                             */
                            retry_schedule: string[] | null;
                            circuit: ({
                                /** @enum {boolean} */
                                enabled: false;
                            } | {
                                /** @enum {boolean} */
                                enabled?: true;
                                /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                failure_ratio?: number;
                                /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                min_attempts?: number;
                                /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                window?: string;
                                /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                cooldown?: string;
                            }) | (never | null);
                            /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                            circuit_state: "closed" | "open" | "half_open";
                            /**
                             * Format: date-time
                             * @description While open: when the probe may go
                             */
                            circuit_open_until: string | null;
                            /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                            ordering: "unordered" | "fifo";
                            /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                            signature_type: "hmac" | "ed25519";
                            /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                            public_key: string | null;
                            /** @description TLS settings (mutual TLS, private CA); null: none */
                            tls: {
                                client_cert: string | null;
                                /** @description "<redacted>" when set */
                                client_key: string | null;
                                ca: string | null;
                                /**
                                 * Format: date-time
                                 * @description The client certificate's expiry
                                 */
                                client_cert_not_after: string | null;
                            } | null;
                            /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                            auth: {
                                /** @enum {string} */
                                type: "oauth2_client_credentials";
                                token_url: string;
                                client_id: string;
                                /** @description Always "<redacted>" */
                                client_secret: string;
                                scope: string | null;
                                audience: string | null;
                                client_auth: "basic" | "post";
                            } | null;
                            /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                            type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                            /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                            config: {
                                [key: string]: unknown;
                            } | null;
                            /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                            transformation: {
                                code: string | null;
                                enabled: boolean;
                                /** Format: date-time */
                                updated_at: string;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete an endpoint */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Done; no body */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /** Update an endpoint; status `disabled` stops deliveries, `active` re-enables */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "event_types": [
                     *         "invoice.paid",
                     *         "invoice.refunded"
                     *       ],
                     *       "rate_limit": 100
                     *     }
                     */
                    "application/json": {
                        /** @description Receiver URL; https in Live mode. For a destination, the broker's or bucket's address */
                        url?: string;
                        description?: string;
                        /** @description Event types to receive; omitted or empty receives every event type */
                        event_types?: string[];
                        status?: "active" | "disabled";
                        /** @description Headers sent with every request to the endpoint (at most 20; reserved names refused). An update replaces the whole set; a sensitive value sent back as "<redacted>" keeps the stored one */
                        headers?: {
                            [key: string]: string;
                        };
                        /** @description Names of `headers` whose values reads show as "<redacted>" (they are still sent as set), beside those that look like credentials. An update that gives it replaces the marks; one that leaves it out keeps the marks of the headers still there. Names not among the headers are ignored */
                        sensitive_headers?: string[];
                        /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                        signature_type?: "hmac" | "ed25519";
                        /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                        rate_limit?: number | null;
                        /**
                         * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                         * @example [
                         *       "0s",
                         *       "30s",
                         *       "5m",
                         *       "1h"
                         *     ]
                         */
                        retry_schedule?: string[] | null;
                        circuit?: ({
                            /** @enum {boolean} */
                            enabled: false;
                        } | {
                            /** @enum {boolean} */
                            enabled?: true;
                            /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                            failure_ratio?: number;
                            /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                            min_attempts?: number;
                            /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                            window?: string;
                            /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                            cooldown?: string;
                        }) | (never | null);
                        /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                        ordering?: "unordered" | "fifo";
                        /** @description Your stable id for this endpoint in its application (not starting with ep_) */
                        uid?: string | null;
                        channels?: string[];
                        /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                        filter?: {
                            [key: string]: unknown;
                        } | null;
                        /** @description TLS settings for https receivers: client_cert and client_key together (mutual TLS), ca for a private CA. An update replaces the whole object; null removes it */
                        tls?: {
                            /** @description Client certificate (PEM; its chain may follow), sent to receivers that demand mutual TLS */
                            client_cert?: string | null;
                            /** @description Its private key (PEM, unencrypted; sealed at rest). "<redacted>" keeps the stored one */
                            client_key?: string | null;
                            /** @description CA certificates (PEM) that replace the default roots for the receiver's certificate */
                            ca?: string | null;
                        } | null;
                        /** @description OAuth2 client credentials: every request carries a bearer token from token_url (cached until shortly before it expires; a 401 fetches a new one once). null removes it */
                        auth?: {
                            /** @enum {string} */
                            type: "oauth2_client_credentials";
                            /** @description The token server's URL; the endpoint URL's rules apply (https in Live mode, public addresses) */
                            token_url: string;
                            client_id: string;
                            /** @description Sealed at rest, read back as "<redacted>"; "<redacted>" in an update keeps the stored one */
                            client_secret: string;
                            scope?: string | null;
                            audience?: string | null;
                            /** @description basic (default): client_secret_basic; post: the id and secret in the form body */
                            client_auth?: "basic" | "post";
                        } | null;
                        /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                        type?: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                        /** @description A destination's settings by its type (docs/destinations.md); secrets sent back as "<redacted>" keep the stored ones. Not for http */
                        config?: {
                            [key: string]: unknown;
                        } | null;
                        /**
                         * @description A field left out keeps its value; code is checked (it must compile and define handler)
                         * @example {
                         *       "code": "function handler(webhook) {\n  webhook.payload = { text: webhook.eventType + \": \" + webhook.payload.data.invoice_id };\n  return webhook;\n}",
                         *       "enabled": true
                         *     }
                         */
                        transformation?: {
                            /** @description JavaScript that defines `function handler(webhook)` and returns the webhook changed; null: none */
                            code?: string | null;
                            /** @description Whether it runs on every attempt (default: true when code is given) */
                            enabled?: boolean;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "endpoint",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "uid": "billing",
                         *       "url": "https://acme.example/webhooks",
                         *       "status": "active",
                         *       "event_types": [
                         *         "invoice.paid"
                         *       ],
                         *       "channels": [],
                         *       "filter": {
                         *         "data.amount": {
                         *           "$gte": 1000
                         *         }
                         *       },
                         *       "description": "Billing receiver",
                         *       "headers": {
                         *         "Authorization": "<redacted>",
                         *         "X-Tenant": "acme"
                         *       },
                         *       "sensitive_headers": [
                         *         "Authorization"
                         *       ],
                         *       "rate_limit": 50,
                         *       "retry_schedule": null,
                         *       "circuit": null,
                         *       "circuit_state": "closed",
                         *       "circuit_open_until": null,
                         *       "ordering": "unordered",
                         *       "signature_type": "hmac",
                         *       "public_key": null,
                         *       "tls": null,
                         *       "auth": {
                         *         "type": "oauth2_client_credentials",
                         *         "token_url": "https://auth.acme.example/oauth/token",
                         *         "client_id": "herald",
                         *         "client_secret": "<redacted>",
                         *         "scope": "webhooks:write",
                         *         "audience": null,
                         *         "client_auth": "basic"
                         *       },
                         *       "type": "http",
                         *       "config": null,
                         *       "transformation": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description ep_… */
                            id: string;
                            /** @enum {string} */
                            object: "endpoint";
                            app_id: string;
                            /** @description Your stable id for the endpoint, unique in its application */
                            uid: string | null;
                            /** Format: uri */
                            url: string;
                            status: "active" | "disabled" | "failing";
                            event_types: string[];
                            /** @description Receives only messages sharing one of these channels; empty: every message */
                            channels: string[];
                            /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                            filter: {
                                [key: string]: unknown;
                            } | null;
                            description: string;
                            /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                            sensitive_headers: string[];
                            /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                            rate_limit: number | null;
                            /**
                             * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                             * @example [
                             *       "0s",
                             *       "30s",
                             *       "5m",
                             *       "1h"
                             *     ]
                             */
                            retry_schedule: string[] | null;
                            circuit: ({
                                /** @enum {boolean} */
                                enabled: false;
                            } | {
                                /** @enum {boolean} */
                                enabled?: true;
                                /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                failure_ratio?: number;
                                /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                min_attempts?: number;
                                /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                window?: string;
                                /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                cooldown?: string;
                            }) | (never | null);
                            /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                            circuit_state: "closed" | "open" | "half_open";
                            /**
                             * Format: date-time
                             * @description While open: when the probe may go
                             */
                            circuit_open_until: string | null;
                            /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                            ordering: "unordered" | "fifo";
                            /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                            signature_type: "hmac" | "ed25519";
                            /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                            public_key: string | null;
                            /** @description TLS settings (mutual TLS, private CA); null: none */
                            tls: {
                                client_cert: string | null;
                                /** @description "<redacted>" when set */
                                client_key: string | null;
                                ca: string | null;
                                /**
                                 * Format: date-time
                                 * @description The client certificate's expiry
                                 */
                                client_cert_not_after: string | null;
                            } | null;
                            /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                            auth: {
                                /** @enum {string} */
                                type: "oauth2_client_credentials";
                                token_url: string;
                                client_id: string;
                                /** @description Always "<redacted>" */
                                client_secret: string;
                                scope: string | null;
                                audience: string | null;
                                client_auth: "basic" | "post";
                            } | null;
                            /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                            type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                            /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                            config: {
                                [key: string]: unknown;
                            } | null;
                            /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                            transformation: {
                                code: string | null;
                                enabled: boolean;
                                /** Format: date-time */
                                updated_at: string;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/api/v1/endpoints/{id}/filter-test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Whether the endpoint's content filter (or a draft of one) lets a message with this payload through */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "event_type": "invoice.paid",
                     *       "payload": {
                     *         "invoice_id": "inv_1001",
                     *         "amount": 4200
                     *       },
                     *       "filter": {
                     *         "data.amount": {
                     *           "$gte": 1000
                     *         }
                     *       }
                     *     }
                     */
                    "application/json": {
                        /** @description The payload, as `data` */
                        payload: {
                            [key: string]: unknown;
                        };
                        /** @description As `type` (default empty) */
                        event_type?: string;
                        /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                        filter?: {
                            [key: string]: unknown;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "matches": true
                         *     }
                         */
                        "application/json": {
                            /** @description true also when there is no filter */
                            matches: boolean;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}/transformation/simulate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The request the endpoint's transformation (or a draft of it) would make for this payload; nothing is sent or saved */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "code": "function handler(webhook) {\n  webhook.payload = { text: webhook.eventType + \": \" + webhook.payload.data.invoice_id };\n  return webhook;\n}",
                     *       "event_type": "invoice.paid",
                     *       "payload": {
                     *         "invoice_id": "inv_1001"
                     *       }
                     *     }
                     */
                    "application/json": {
                        code?: string;
                        /** @description The payload, as `data` */
                        payload: {
                            [key: string]: unknown;
                        };
                        /** @description As `type` (default `test.event`) */
                        event_type?: string;
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "method": "POST",
                         *       "url": "https://acme.example/webhooks",
                         *       "headers": {
                         *         "x-event": "invoice.paid"
                         *       },
                         *       "payload": {
                         *         "text": "invoice.paid"
                         *       },
                         *       "cancel": false
                         *     }
                         */
                        "application/json": {
                            method: string;
                            url: string;
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The body as it would be sent (any JSON value) */
                            payload: unknown;
                            /** @description true: no request would be made */
                            cancel: boolean;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate the signing secret; the previous one also signs until previous_valid_until */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "signing_secret": "whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e",
                         *       "previous_valid_until": "2026-01-02T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            id: string;
                            /** @description hmac endpoints: the new whsec_ secret */
                            signing_secret?: string;
                            /** @description ed25519 endpoints: the new whpk_ public key */
                            public_key?: string;
                            /** Format: date-time */
                            previous_valid_until: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/operational-endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List operational endpoints */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an ep_… id) */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "endpoint",
                         *           "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "uid": "billing",
                         *           "url": "https://ops.acme.example/herald",
                         *           "status": "active",
                         *           "event_types": [
                         *             "endpoint.disabled",
                         *             "message.attempt.exhausted"
                         *           ],
                         *           "channels": [],
                         *           "filter": {
                         *             "data.amount": {
                         *               "$gte": 1000
                         *             }
                         *           },
                         *           "description": "Pager",
                         *           "headers": {},
                         *           "sensitive_headers": [
                         *             "Authorization"
                         *           ],
                         *           "rate_limit": null,
                         *           "retry_schedule": null,
                         *           "circuit": null,
                         *           "circuit_state": "closed",
                         *           "circuit_open_until": null,
                         *           "ordering": "unordered",
                         *           "signature_type": "hmac",
                         *           "public_key": null,
                         *           "tls": null,
                         *           "auth": null,
                         *           "type": "http",
                         *           "config": null,
                         *           "transformation": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description ep_… */
                                id: string;
                                /** @enum {string} */
                                object: "endpoint";
                                app_id: string;
                                /** @description Your stable id for the endpoint, unique in its application */
                                uid: string | null;
                                /** Format: uri */
                                url: string;
                                status: "active" | "disabled" | "failing";
                                event_types: string[];
                                /** @description Receives only messages sharing one of these channels; empty: every message */
                                channels: string[];
                                /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                                filter: {
                                    [key: string]: unknown;
                                } | null;
                                description: string;
                                /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                                headers: {
                                    [key: string]: string;
                                };
                                /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                                sensitive_headers: string[];
                                /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                                rate_limit: number | null;
                                /**
                                 * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                                 * @example [
                                 *       "0s",
                                 *       "30s",
                                 *       "5m",
                                 *       "1h"
                                 *     ]
                                 */
                                retry_schedule: string[] | null;
                                circuit: ({
                                    /** @enum {boolean} */
                                    enabled: false;
                                } | {
                                    /** @enum {boolean} */
                                    enabled?: true;
                                    /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                    failure_ratio?: number;
                                    /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                    min_attempts?: number;
                                    /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                    window?: string;
                                    /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                    cooldown?: string;
                                }) | (never | null);
                                /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                                circuit_state: "closed" | "open" | "half_open";
                                /**
                                 * Format: date-time
                                 * @description While open: when the probe may go
                                 */
                                circuit_open_until: string | null;
                                /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                                ordering: "unordered" | "fifo";
                                /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                                signature_type: "hmac" | "ed25519";
                                /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                                public_key: string | null;
                                /** @description TLS settings (mutual TLS, private CA); null: none */
                                tls: {
                                    client_cert: string | null;
                                    /** @description "<redacted>" when set */
                                    client_key: string | null;
                                    ca: string | null;
                                    /**
                                     * Format: date-time
                                     * @description The client certificate's expiry
                                     */
                                    client_cert_not_after: string | null;
                                } | null;
                                /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                                auth: {
                                    /** @enum {string} */
                                    type: "oauth2_client_credentials";
                                    token_url: string;
                                    client_id: string;
                                    /** @description Always "<redacted>" */
                                    client_secret: string;
                                    scope: string | null;
                                    audience: string | null;
                                    client_auth: "basic" | "post";
                                } | null;
                                /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                                type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                                /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                                config: {
                                    [key: string]: unknown;
                                } | null;
                                /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                                transformation: {
                                    code: string | null;
                                    enabled: boolean;
                                    /** Format: date-time */
                                    updated_at: string;
                                } | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create an operational endpoint (the signing secret is returned once) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "url": "https://ops.acme.example/herald",
                     *       "description": "Pager",
                     *       "event_types": [
                     *         "endpoint.disabled",
                     *         "message.attempt.exhausted"
                     *       ]
                     *     }
                     */
                    "application/json": {
                        /** @description Receiver URL; https in Live mode. For a destination, the broker's or bucket's address */
                        url: string;
                        description?: string;
                        /** @description Operational events to receive; omitted or empty receives all of them */
                        event_types?: ("endpoint.created" | "endpoint.updated" | "endpoint.deleted" | "endpoint.disabled" | "endpoint.circuit_opened" | "endpoint.circuit_closed" | "message.attempt.failing" | "message.attempt.exhausted" | "message.attempt.recovered")[];
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "endpoint",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "uid": "billing",
                         *       "url": "https://ops.acme.example/herald",
                         *       "status": "active",
                         *       "event_types": [
                         *         "endpoint.disabled",
                         *         "message.attempt.exhausted"
                         *       ],
                         *       "channels": [],
                         *       "filter": {
                         *         "data.amount": {
                         *           "$gte": 1000
                         *         }
                         *       },
                         *       "description": "Pager",
                         *       "headers": {},
                         *       "sensitive_headers": [
                         *         "Authorization"
                         *       ],
                         *       "rate_limit": null,
                         *       "retry_schedule": null,
                         *       "circuit": null,
                         *       "circuit_state": "closed",
                         *       "circuit_open_until": null,
                         *       "ordering": "unordered",
                         *       "signature_type": "hmac",
                         *       "public_key": null,
                         *       "tls": null,
                         *       "auth": null,
                         *       "type": "http",
                         *       "config": null,
                         *       "transformation": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
                         *     }
                         */
                        "application/json": {
                            /** @description ep_… */
                            id: string;
                            /** @enum {string} */
                            object: "endpoint";
                            app_id: string;
                            /** @description Your stable id for the endpoint, unique in its application */
                            uid: string | null;
                            /** Format: uri */
                            url: string;
                            status: "active" | "disabled" | "failing";
                            event_types: string[];
                            /** @description Receives only messages sharing one of these channels; empty: every message */
                            channels: string[];
                            /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                            filter: {
                                [key: string]: unknown;
                            } | null;
                            description: string;
                            /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                            sensitive_headers: string[];
                            /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                            rate_limit: number | null;
                            /**
                             * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                             * @example [
                             *       "0s",
                             *       "30s",
                             *       "5m",
                             *       "1h"
                             *     ]
                             */
                            retry_schedule: string[] | null;
                            circuit: ({
                                /** @enum {boolean} */
                                enabled: false;
                            } | {
                                /** @enum {boolean} */
                                enabled?: true;
                                /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                failure_ratio?: number;
                                /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                min_attempts?: number;
                                /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                window?: string;
                                /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                cooldown?: string;
                            }) | (never | null);
                            /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                            circuit_state: "closed" | "open" | "half_open";
                            /**
                             * Format: date-time
                             * @description While open: when the probe may go
                             */
                            circuit_open_until: string | null;
                            /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                            ordering: "unordered" | "fifo";
                            /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                            signature_type: "hmac" | "ed25519";
                            /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                            public_key: string | null;
                            /** @description TLS settings (mutual TLS, private CA); null: none */
                            tls: {
                                client_cert: string | null;
                                /** @description "<redacted>" when set */
                                client_key: string | null;
                                ca: string | null;
                                /**
                                 * Format: date-time
                                 * @description The client certificate's expiry
                                 */
                                client_cert_not_after: string | null;
                            } | null;
                            /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                            auth: {
                                /** @enum {string} */
                                type: "oauth2_client_credentials";
                                token_url: string;
                                client_id: string;
                                /** @description Always "<redacted>" */
                                client_secret: string;
                                scope: string | null;
                                audience: string | null;
                                client_auth: "basic" | "post";
                            } | null;
                            /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                            type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                            /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                            config: {
                                [key: string]: unknown;
                            } | null;
                            /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                            transformation: {
                                code: string | null;
                                enabled: boolean;
                                /** Format: date-time */
                                updated_at: string;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            /** @description whsec_…, shown once */
                            signing_secret?: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/operational-endpoints/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete an operational endpoint */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Done; no body */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        /** Update an operational endpoint; status `active` re-enables one that a 410 or failures disabled */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "event_types": [
                     *         "endpoint.disabled",
                     *         "message.attempt.failing"
                     *       ],
                     *       "status": "active"
                     *     }
                     */
                    "application/json": {
                        /** @description Receiver URL; https in Live mode. For a destination, the broker's or bucket's address */
                        url?: string;
                        description?: string;
                        /** @description Operational events to receive; omitted or empty receives all of them */
                        event_types?: ("endpoint.created" | "endpoint.updated" | "endpoint.deleted" | "endpoint.disabled" | "endpoint.circuit_opened" | "endpoint.circuit_closed" | "message.attempt.failing" | "message.attempt.exhausted" | "message.attempt.recovered")[];
                        status?: "active" | "disabled";
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "endpoint",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "uid": "billing",
                         *       "url": "https://ops.acme.example/herald",
                         *       "status": "active",
                         *       "event_types": [
                         *         "endpoint.disabled",
                         *         "message.attempt.exhausted"
                         *       ],
                         *       "channels": [],
                         *       "filter": {
                         *         "data.amount": {
                         *           "$gte": 1000
                         *         }
                         *       },
                         *       "description": "Pager",
                         *       "headers": {},
                         *       "sensitive_headers": [
                         *         "Authorization"
                         *       ],
                         *       "rate_limit": null,
                         *       "retry_schedule": null,
                         *       "circuit": null,
                         *       "circuit_state": "closed",
                         *       "circuit_open_until": null,
                         *       "ordering": "unordered",
                         *       "signature_type": "hmac",
                         *       "public_key": null,
                         *       "tls": null,
                         *       "auth": null,
                         *       "type": "http",
                         *       "config": null,
                         *       "transformation": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            /** @description ep_… */
                            id: string;
                            /** @enum {string} */
                            object: "endpoint";
                            app_id: string;
                            /** @description Your stable id for the endpoint, unique in its application */
                            uid: string | null;
                            /** Format: uri */
                            url: string;
                            status: "active" | "disabled" | "failing";
                            event_types: string[];
                            /** @description Receives only messages sharing one of these channels; empty: every message */
                            channels: string[];
                            /** @description MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels */
                            filter: {
                                [key: string]: unknown;
                            } | null;
                            description: string;
                            /** @description Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>" */
                            headers: {
                                [key: string]: string;
                            };
                            /** @description The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…) */
                            sensitive_headers: string[];
                            /** @description Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit */
                            rate_limit: number | null;
                            /**
                             * @description The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule
                             * @example [
                             *       "0s",
                             *       "30s",
                             *       "5m",
                             *       "1h"
                             *     ]
                             */
                            retry_schedule: string[] | null;
                            circuit: ({
                                /** @enum {boolean} */
                                enabled: false;
                            } | {
                                /** @enum {boolean} */
                                enabled?: true;
                                /** @description Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO) */
                                failure_ratio?: number;
                                /** @description 1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS) */
                                min_attempts?: number;
                                /** @description 1s to 1d (HERALD_CIRCUIT_WINDOW) */
                                window?: string;
                                /** @description 100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN) */
                                cooldown?: string;
                            }) | (never | null);
                            /** @description closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides */
                            circuit_state: "closed" | "open" | "half_open";
                            /**
                             * Format: date-time
                             * @description While open: when the probe may go
                             */
                            circuit_open_until: string | null;
                            /** @description fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait) */
                            ordering: "unordered" | "fifo";
                            /** @description hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation */
                            signature_type: "hmac" | "ed25519";
                            /** @description ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac */
                            public_key: string | null;
                            /** @description TLS settings (mutual TLS, private CA); null: none */
                            tls: {
                                client_cert: string | null;
                                /** @description "<redacted>" when set */
                                client_key: string | null;
                                ca: string | null;
                                /**
                                 * Format: date-time
                                 * @description The client certificate's expiry
                                 */
                                client_cert_not_after: string | null;
                            } | null;
                            /** @description OAuth2 client credentials the requests carry a bearer token from; null: none */
                            auth: {
                                /** @enum {string} */
                                type: "oauth2_client_credentials";
                                token_url: string;
                                client_id: string;
                                /** @description Always "<redacted>" */
                                client_secret: string;
                                scope: string | null;
                                audience: string | null;
                                client_auth: "basic" | "post";
                            } | null;
                            /** @description http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation */
                            type: "http" | "rabbitmq" | "nats" | "redis" | "mqtt" | "kafka" | "sqs" | "s3";
                            /** @description A destination's settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http */
                            config: {
                                [key: string]: unknown;
                            } | null;
                            /** @description The endpoint's transformation (docs/transformations.md); null: none was ever set */
                            transformation: {
                                code: string | null;
                                enabled: boolean;
                                /** Format: date-time */
                                updated_at: string;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/api/v1/operational-endpoints/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate the signing secret; the previous one also signs until previous_valid_until */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "signing_secret": "whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e",
                         *       "previous_valid_until": "2026-01-02T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            id: string;
                            /** @description hmac endpoints: the new whsec_ secret */
                            signing_secret?: string;
                            /** @description ed25519 endpoints: the new whpk_ public key */
                            public_key?: string;
                            /** Format: date-time */
                            previous_valid_until: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List deliveries, newest first, filtered by message, endpoint, application, event type, status or time */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an dlv_… id) */
                    cursor?: string;
                    message_id?: string;
                    endpoint_id?: string;
                    app_id?: string;
                    event_type?: string;
                    status?: "pending" | "success" | "failed" | "disabled";
                    /** @description Created at or after this time */
                    since?: string;
                    /** @description Created before this time */
                    until?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "delivery",
                         *           "message_id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "endpoint_id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "event_type": "invoice.paid",
                         *           "status": "success",
                         *           "attempt_count": 1,
                         *           "next_attempt_at": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description dlv_… */
                                id: string;
                                /** @enum {string} */
                                object: "delivery";
                                message_id: string;
                                endpoint_id: string;
                                /** @description The message's event type; null once the message is no longer stored */
                                event_type: string | null;
                                status: "pending" | "success" | "failed" | "disabled";
                                attempt_count: number;
                                /** Format: date-time */
                                next_attempt_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/deliveries/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a delivery with its most recent attempts, newest first */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "delivery",
                         *       "message_id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "endpoint_id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "event_type": "invoice.paid",
                         *       "status": "success",
                         *       "attempt_count": 1,
                         *       "next_attempt_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                         *       "attempts": [
                         *         {
                         *           "attempt_number": 1,
                         *           "trigger": "scheduled",
                         *           "status": "success",
                         *           "response_status": 200,
                         *           "request_headers": {
                         *             "x-customer-key": "<redacted>",
                         *             "content-type": "application/json",
                         *             "user-agent": "Herald-Webhooks/0.1 (+https://github.com/herald-webhooks/herald)",
                         *             "webhook-id": "evt_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *             "webhook-timestamp": "1795000000",
                         *             "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
                         *             "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                         *           },
                         *           "response_headers": {
                         *             "content-type": "text/plain",
                         *             "content-length": "2"
                         *           },
                         *           "response_body": "ok",
                         *           "error": null,
                         *           "duration_ms": 42,
                         *           "created_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ]
                         *     }
                         */
                        "application/json": {
                            /** @description dlv_… */
                            id: string;
                            /** @enum {string} */
                            object: "delivery";
                            message_id: string;
                            endpoint_id: string;
                            /** @description The message's event type; null once the message is no longer stored */
                            event_type: string | null;
                            status: "pending" | "success" | "failed" | "disabled";
                            attempt_count: number;
                            /** Format: date-time */
                            next_attempt_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            /** @description The message's W3C trace id, which every attempt's traceparent carries */
                            trace_id: string;
                            attempts: {
                                attempt_number: number;
                                trigger: "scheduled" | "manual";
                                status: "success" | "failed" | "cancelled";
                                response_status: number | null;
                                /** @description The headers Herald sent, by lowercase name; credentials (the endpoint's sensitive headers, an OAuth2 bearer token) show as <redacted>, a value past 1,024 characters is cut and ends in …. Null on attempts made before headers were kept */
                                request_headers: {
                                    [key: string]: string;
                                } | null;
                                /** @description The receiver's answer's headers as received, by lowercase name (a repeated name's values joined by ", "); credential-looking ones (set-cookie, authorization, names holding token, secret, key, session…) show as <redacted>, a value past 1,024 characters is cut and ends in …; null when no answer came */
                                response_headers: {
                                    [key: string]: string;
                                } | null;
                                /** @description The receiver's answer's body, up to HERALD_RESPONSE_BODY_LIMIT bytes */
                                response_body: string | null;
                                error: string | null;
                                duration_ms: number;
                                /** Format: date-time */
                                created_at: string;
                                /** @description The request the endpoint's transformation made (docs/transformations.md): its method, URL and body as sent. Null: the plain request, a POST of the message's envelope to the endpoint's URL */
                                request?: {
                                    method: string;
                                    url: string;
                                    /** @description The body as sent */
                                    body: string;
                                } | null;
                            }[];
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/deliveries/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Queue one more attempt of a delivery */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "delivery_id": "dlv_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "status": "enqueued",
                         *       "attempt_number": 4
                         *     }
                         */
                        "application/json": {
                            delivery_id: string;
                            /** @enum {string} */
                            status: "enqueued";
                            attempt_number: number;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/event-types": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the environment's event catalog */
        get: {
            parameters: {
                query?: {
                    limit?: number;
                    /** @description next_cursor of the previous page (an event type name) */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "name": "invoice.paid",
                         *           "object": "event_type",
                         *           "description": "An invoice was paid in full.",
                         *           "version": 2,
                         *           "example_json": {
                         *             "invoice_id": "inv_1001",
                         *             "amount": 4200,
                         *             "currency": "usd"
                         *           },
                         *           "schema": {
                         *             "type": "object",
                         *             "properties": {
                         *               "invoice_id": {
                         *                 "type": "string"
                         *               },
                         *               "amount": {
                         *                 "type": "integer"
                         *               },
                         *               "currency": {
                         *                 "type": "string"
                         *               }
                         *             },
                         *             "required": [
                         *               "invoice_id",
                         *               "amount"
                         *             ]
                         *           },
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "updated_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                name: string;
                                /** @enum {string} */
                                object: "event_type";
                                description: string;
                                version: number;
                                example_json: {
                                    [key: string]: unknown;
                                };
                                /** @description JSON Schema (draft 2020-12) of payloads, or null */
                                schema: {
                                    [key: string]: unknown;
                                } | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Add an event type to the catalog */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "name": "invoice.paid",
                     *       "description": "An invoice was paid in full.",
                     *       "example_json": {
                     *         "invoice_id": "inv_1001",
                     *         "amount": 4200,
                     *         "currency": "usd"
                     *       },
                     *       "schema": {
                     *         "type": "object",
                     *         "properties": {
                     *           "invoice_id": {
                     *             "type": "string"
                     *           },
                     *           "amount": {
                     *             "type": "integer"
                     *           },
                     *           "currency": {
                     *             "type": "string"
                     *           }
                     *         },
                     *         "required": [
                     *           "invoice_id",
                     *           "amount"
                     *         ]
                     *       }
                     *     }
                     */
                    "application/json": {
                        /** @description Dotted name such as invoice.paid */
                        name: string;
                        description?: string;
                        /** @description Sample payload, used by send-test; must satisfy `schema` */
                        example_json?: {
                            [key: string]: unknown;
                        };
                        /** @description JSON Schema (draft 2020-12) that payloads of this event type must satisfy; at most 65536 characters of JSON, references resolved within the schema only */
                        schema?: {
                            [key: string]: unknown;
                        };
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "name": "invoice.paid",
                         *       "object": "event_type",
                         *       "description": "An invoice was paid in full.",
                         *       "version": 2,
                         *       "example_json": {
                         *         "invoice_id": "inv_1001",
                         *         "amount": 4200,
                         *         "currency": "usd"
                         *       },
                         *       "schema": {
                         *         "type": "object",
                         *         "properties": {
                         *           "invoice_id": {
                         *             "type": "string"
                         *           },
                         *           "amount": {
                         *             "type": "integer"
                         *           },
                         *           "currency": {
                         *             "type": "string"
                         *           }
                         *         },
                         *         "required": [
                         *           "invoice_id",
                         *           "amount"
                         *         ]
                         *       },
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            name: string;
                            /** @enum {string} */
                            object: "event_type";
                            description: string;
                            version: number;
                            example_json: {
                                [key: string]: unknown;
                            };
                            /** @description JSON Schema (draft 2020-12) of payloads, or null */
                            schema: {
                                [key: string]: unknown;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/event-types/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a catalog entry */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    name: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "name": "invoice.paid",
                         *       "object": "event_type",
                         *       "description": "An invoice was paid in full.",
                         *       "version": 2,
                         *       "example_json": {
                         *         "invoice_id": "inv_1001",
                         *         "amount": 4200,
                         *         "currency": "usd"
                         *       },
                         *       "schema": {
                         *         "type": "object",
                         *         "properties": {
                         *           "invoice_id": {
                         *             "type": "string"
                         *           },
                         *           "amount": {
                         *             "type": "integer"
                         *           },
                         *           "currency": {
                         *             "type": "string"
                         *           }
                         *         },
                         *         "required": [
                         *           "invoice_id",
                         *           "amount"
                         *         ]
                         *       },
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            name: string;
                            /** @enum {string} */
                            object: "event_type";
                            description: string;
                            version: number;
                            example_json: {
                                [key: string]: unknown;
                            };
                            /** @description JSON Schema (draft 2020-12) of payloads, or null */
                            schema: {
                                [key: string]: unknown;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Update a catalog entry; a new example or schema bumps its version */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    name: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "description": "An invoice was paid in full, possibly in several payments.",
                     *       "example_json": {
                     *         "invoice_id": "inv_1001",
                     *         "amount": 4200,
                     *         "currency": "usd",
                     *         "payments": 2
                     *       }
                     *     }
                     */
                    "application/json": {
                        description?: string;
                        /** @description Sample payload, used by send-test; must satisfy `schema` */
                        example_json?: {
                            [key: string]: unknown;
                        };
                        /** @description JSON Schema (draft 2020-12) that payloads of this event type must satisfy; at most 65536 characters of JSON, references resolved within the schema only */
                        schema?: {
                            [key: string]: unknown;
                        } | null;
                    };
                };
            };
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "name": "invoice.paid",
                         *       "object": "event_type",
                         *       "description": "An invoice was paid in full.",
                         *       "version": 2,
                         *       "example_json": {
                         *         "invoice_id": "inv_1001",
                         *         "amount": 4200,
                         *         "currency": "usd"
                         *       },
                         *       "schema": {
                         *         "type": "object",
                         *         "properties": {
                         *           "invoice_id": {
                         *             "type": "string"
                         *           },
                         *           "amount": {
                         *             "type": "integer"
                         *           },
                         *           "currency": {
                         *             "type": "string"
                         *           }
                         *         },
                         *         "required": [
                         *           "invoice_id",
                         *           "amount"
                         *         ]
                         *       },
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z"
                         *     }
                         */
                        "application/json": {
                            name: string;
                            /** @enum {string} */
                            object: "event_type";
                            description: string;
                            version: number;
                            example_json: {
                                [key: string]: unknown;
                            };
                            /** @description JSON Schema (draft 2020-12) of payloads, or null */
                            schema: {
                                [key: string]: unknown;
                            } | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        trace?: never;
    };
    "/api/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List keys (never their secret part) */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an key_… id) */
                    cursor?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "api_key",
                         *           "name": "CI key",
                         *           "prefix": "sk_test_",
                         *           "livemode": false,
                         *           "role": "emitter",
                         *           "app_ids": [
                         *             "app_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *           ],
                         *           "expires_at": null,
                         *           "created_at": "2026-01-01T00:00:00.000Z",
                         *           "revoked_at": null
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description key_… */
                                id: string;
                                /** @enum {string} */
                                object: "api_key";
                                name: string;
                                prefix: "sk_test_" | "sk_live_";
                                livemode: boolean;
                                /** @description What the key may do: admin (everything), writer, reader or emitter */
                                role: "admin" | "writer" | "reader" | "emitter";
                                /** @description The applications (app_… ids) the key acts on; null: every application */
                                app_ids: string[] | null;
                                /** Format: date-time */
                                expires_at: string | null;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                revoked_at: string | null;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        /** Create another key for the calling key's organization and environment (shown once), with a role, applications and an expiry within the caller's own */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name?: string;
                        /** @description admin (the default: everything), writer, reader or emitter */
                        role?: "admin" | "writer" | "reader" | "emitter";
                        /** @description Ids or uids of the applications the key acts on; absent: every application */
                        app_ids?: string[];
                        /** @description When the key stops working (date-time); absent: never */
                        expires_at?: string;
                    };
                };
            };
            responses: {
                /** @description Created */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "api_key",
                         *       "name": "CI key",
                         *       "prefix": "sk_test_",
                         *       "livemode": false,
                         *       "role": "emitter",
                         *       "app_ids": [
                         *         "app_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       ],
                         *       "expires_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "revoked_at": null,
                         *       "key": "sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ"
                         *     }
                         */
                        "application/json": {
                            /** @description key_… */
                            id: string;
                            /** @enum {string} */
                            object: "api_key";
                            name: string;
                            prefix: "sk_test_" | "sk_live_";
                            livemode: boolean;
                            /** @description What the key may do: admin (everything), writer, reader or emitter */
                            role: "admin" | "writer" | "reader" | "emitter";
                            /** @description The applications (app_… ids) the key acts on; null: every application */
                            app_ids: string[] | null;
                            /** Format: date-time */
                            expires_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            revoked_at: string | null;
                            /** @description The key in plaintext, shown once */
                            key: string;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/api-keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a key; it stops working at once */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "object": "api_key",
                         *       "name": "CI key",
                         *       "prefix": "sk_test_",
                         *       "livemode": false,
                         *       "role": "emitter",
                         *       "app_ids": [
                         *         "app_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       ],
                         *       "expires_at": null,
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "revoked_at": null
                         *     }
                         */
                        "application/json": {
                            /** @description key_… */
                            id: string;
                            /** @enum {string} */
                            object: "api_key";
                            name: string;
                            prefix: "sk_test_" | "sk_live_";
                            livemode: boolean;
                            /** @description What the key may do: admin (everything), writer, reader or emitter */
                            role: "admin" | "writer" | "reader" | "emitter";
                            /** @description The applications (app_… ids) the key acts on; null: every application */
                            app_ids: string[] | null;
                            /** Format: date-time */
                            expires_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            revoked_at: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/audit-log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every change of the environment's configuration, newest first (admin keys only) */
        get: {
            parameters: {
                query?: {
                    /** @description Items per page (default 50) */
                    limit?: number;
                    /** @description next_cursor of the previous page (an aud_… id) */
                    cursor?: string;
                    resource_type?: string;
                    resource_id?: string;
                    action?: string;
                    actor_id?: string;
                    /** @description Created at or after this time */
                    since?: string;
                    /** @description Created before this time */
                    until?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "list",
                         *       "data": [
                         *         {
                         *           "id": "aud_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "object": "audit_entry",
                         *           "actor": {
                         *             "type": "api_key",
                         *             "id": "key_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *           },
                         *           "action": "endpoint.updated",
                         *           "resource": {
                         *             "type": "endpoint",
                         *             "id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *           },
                         *           "changes": {
                         *             "url": [
                         *               "https://old.example.com/hook",
                         *               "https://example.com/hook"
                         *             ],
                         *             "headers_sealed": [
                         *               "<redacted>",
                         *               "<redacted>"
                         *             ]
                         *           },
                         *           "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *           "created_at": "2026-01-01T00:00:00.000Z"
                         *         }
                         *       ],
                         *       "has_more": false,
                         *       "next_cursor": null
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description aud_… */
                                id: string;
                                /** @enum {string} */
                                object: "audit_entry";
                                actor: {
                                    type: "api_key" | "portal" | "cli" | "system";
                                    /** @description the API key (key_…), the portal's application (app_…) or the CLI's system user */
                                    id: string | null;
                                };
                                /** @description <resource>.<verb>, such as endpoint.updated or api_key.created */
                                action: string;
                                resource: {
                                    type: string;
                                    id: string;
                                };
                                /** @description each changed field: [before, after]; null before a create and after a delete; secrets read "<redacted>" */
                                changes: {
                                    [key: string]: unknown[];
                                };
                                request_id: string | null;
                                /** Format: date-time */
                                created_at: string;
                            }[];
                            has_more: boolean;
                            next_cursor: string | null;
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Give every failed or disabled delivery of the endpoint's messages created in [since, until) a new attempt */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "since": "2026-01-01T00:00:00.000Z",
                     *       "until": "2026-01-01T06:00:00.000Z"
                     *     }
                     */
                    "application/json": {
                        /** Format: date-time */
                        since: string;
                        /** Format: date-time */
                        until?: string;
                    };
                };
            };
            responses: {
                /** @description Accepted: the work is queued and done in the background */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "background_task",
                         *       "id": "task_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "kind": "endpoint.recover",
                         *       "status": "running",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "data": {
                         *         "deliveries_enqueued": 500
                         *       },
                         *       "progress": {
                         *         "done": 500,
                         *         "total": null
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "background_task";
                            /** @description task_… */
                            id: string;
                            kind: "endpoint.recover" | "endpoint.replay" | "endpoint.bulk_replay";
                            status: "running" | "finished" | "failed" | "cancelled";
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            data: {
                                /** @description Deliveries given a new attempt so far */
                                deliveries_enqueued: number;
                            };
                            /** @description How far the task has come */
                            progress: {
                                /** @description Deliveries given a new attempt (or sent) so far */
                                done: number;
                                /** @description How many a bulk replay matched when its first batch counted them; null: not known */
                                total: number | null;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}/bulk-replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Give each of the endpoint's deliveries of messages created in [since, until) that match the filters one new attempt, in the background */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    /**
                     * @example {
                     *       "since": "2026-01-01T00:00:00.000Z",
                     *       "until": "2026-01-01T06:00:00.000Z",
                     *       "status_code_class": "5xx"
                     *     }
                     */
                    "application/json": {
                        /** Format: date-time */
                        since: string;
                        /** Format: date-time */
                        until?: string;
                        event_types?: string[];
                        status?: "success" | "failed" | "disabled";
                        status_code_class?: "1xx" | "2xx" | "3xx" | "4xx" | "5xx" | "none";
                        channel?: string;
                        tag?: string;
                    };
                };
            };
            responses: {
                /** @description Accepted: the work is queued and done in the background */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "background_task",
                         *       "id": "task_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "kind": "endpoint.recover",
                         *       "status": "running",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "data": {
                         *         "deliveries_enqueued": 500
                         *       },
                         *       "progress": {
                         *         "done": 500,
                         *         "total": null
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "background_task";
                            /** @description task_… */
                            id: string;
                            kind: "endpoint.recover" | "endpoint.replay" | "endpoint.bulk_replay";
                            status: "running" | "finished" | "failed" | "cancelled";
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            data: {
                                /** @description Deliveries given a new attempt so far */
                                deliveries_enqueued: number;
                            };
                            /** @description How far the task has come */
                            progress: {
                                /** @description Deliveries given a new attempt (or sent) so far */
                                done: number;
                                /** @description How many a bulk replay matched when its first batch counted them; null: not known */
                                total: number | null;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/background-tasks/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel a running background task: no batch starts after this */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "background_task",
                         *       "id": "task_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "kind": "endpoint.recover",
                         *       "status": "running",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "data": {
                         *         "deliveries_enqueued": 500
                         *       },
                         *       "progress": {
                         *         "done": 500,
                         *         "total": null
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "background_task";
                            /** @description task_… */
                            id: string;
                            kind: "endpoint.recover" | "endpoint.replay" | "endpoint.bulk_replay";
                            status: "running" | "finished" | "failed" | "cancelled";
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            data: {
                                /** @description Deliveries given a new attempt so far */
                                deliveries_enqueued: number;
                            };
                            /** @description How far the task has come */
                            progress: {
                                /** @description Deliveries given a new attempt (or sent) so far */
                                done: number;
                                /** @description How many a bulk replay matched when its first batch counted them; null: not known */
                                total: number | null;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Conflicts with what exists (a duplicate uid or name, a limit reached) */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "conflict",
                         *         "message": "an application with uid \"acme\" already exists",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is larger than HERALD_MAX_PAYLOAD_BYTES */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "payload_too_large",
                         *         "message": "Request body is larger than the maximum allowed size",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding) */
                415: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "Content-Type must be application/json",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/background-tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a background task and its progress */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "background_task",
                         *       "id": "task_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "kind": "endpoint.recover",
                         *       "status": "running",
                         *       "created_at": "2026-01-01T00:00:00.000Z",
                         *       "updated_at": "2026-01-01T00:00:00.000Z",
                         *       "data": {
                         *         "deliveries_enqueued": 500
                         *       },
                         *       "progress": {
                         *         "done": 500,
                         *         "total": null
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "background_task";
                            /** @description task_… */
                            id: string;
                            kind: "endpoint.recover" | "endpoint.replay" | "endpoint.bulk_replay";
                            status: "running" | "finished" | "failed" | "cancelled";
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            updated_at: string;
                            data: {
                                /** @description Deliveries given a new attempt so far */
                                deliveries_enqueued: number;
                            };
                            /** @description How far the task has come */
                            progress: {
                                /** @description Deliveries given a new attempt (or sent) so far */
                                done: number;
                                /** @description How many a bulk replay matched when its first batch counted them; null: not known */
                                total: number | null;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/endpoints/{id}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Count the endpoint's attempts by hour (success and failure, p50 and p95 duration) over a window of at most 31 days */
        get: {
            parameters: {
                query?: {
                    /** @description Start of the window (default: the start of the hour 23 hours before the one until falls in) */
                    since?: string;
                    /** @description End of the window, excluded (default: now) */
                    until?: string;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "endpoint_stats",
                         *       "endpoint_id": "ep_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "since": "2026-01-01T00:00:00.000Z",
                         *       "until": "2026-01-01T01:30:00.000Z",
                         *       "buckets": [
                         *         {
                         *           "start": "2026-01-01T00:00:00.000Z",
                         *           "success": 118,
                         *           "failure": 2,
                         *           "p50_ms": 84,
                         *           "p95_ms": 412
                         *         },
                         *         {
                         *           "start": "2026-01-01T01:00:00.000Z",
                         *           "success": 57,
                         *           "failure": 0,
                         *           "p50_ms": 79,
                         *           "p95_ms": 198
                         *         }
                         *       ],
                         *       "totals": {
                         *         "success": 175,
                         *         "failure": 2
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "endpoint_stats";
                            endpoint_id: string;
                            /** Format: date-time */
                            since: string;
                            /** Format: date-time */
                            until: string;
                            /** @description Every UTC hour the window touches, oldest first; counts and durations are of attempts inside [since, until) */
                            buckets: {
                                /** Format: date-time */
                                start: string;
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                                /** @description Median duration of the hour's attempts in ms (nearest rank: a duration one of them took, failures included); null: no attempts */
                                p50_ms: number | null;
                                /** @description 95th percentile of the hour's attempt durations in ms (nearest rank, failures included); null: no attempts */
                                p95_ms: number | null;
                            }[];
                            totals: {
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/applications/{id}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Count the application's attempts by hour and event type (the 20 busiest by name, the rest as other) over a window of at most 31 days */
        get: {
            parameters: {
                query?: {
                    /** @description Start of the window (default: the start of the hour 23 hours before the one until falls in) */
                    since?: string;
                    /** @description End of the window, excluded (default: now) */
                    until?: string;
                };
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description OK */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "object": "application_stats",
                         *       "app_id": "app_01jd5x3k8m2n4p6q8r0s2t4v6w",
                         *       "since": "2026-01-01T00:00:00.000Z",
                         *       "until": "2026-01-01T01:30:00.000Z",
                         *       "event_types": [
                         *         {
                         *           "event_type": "invoice.paid",
                         *           "success": 150,
                         *           "failure": 2
                         *         },
                         *         {
                         *           "event_type": "invoice.refunded",
                         *           "success": 20,
                         *           "failure": 0
                         *         }
                         *       ],
                         *       "other": {
                         *         "success": 5,
                         *         "failure": 0
                         *       },
                         *       "buckets": [
                         *         {
                         *           "start": "2026-01-01T00:00:00.000Z",
                         *           "success": 118,
                         *           "failure": 2,
                         *           "event_types": [
                         *             {
                         *               "event_type": "invoice.paid",
                         *               "success": 100,
                         *               "failure": 2
                         *             },
                         *             {
                         *               "event_type": "invoice.refunded",
                         *               "success": 15,
                         *               "failure": 0
                         *             }
                         *           ],
                         *           "other": {
                         *             "success": 3,
                         *             "failure": 0
                         *           }
                         *         },
                         *         {
                         *           "start": "2026-01-01T01:00:00.000Z",
                         *           "success": 57,
                         *           "failure": 0,
                         *           "event_types": [
                         *             {
                         *               "event_type": "invoice.paid",
                         *               "success": 50,
                         *               "failure": 0
                         *             },
                         *             {
                         *               "event_type": "invoice.refunded",
                         *               "success": 5,
                         *               "failure": 0
                         *             }
                         *           ],
                         *           "other": {
                         *             "success": 2,
                         *             "failure": 0
                         *           }
                         *         }
                         *       ],
                         *       "totals": {
                         *         "success": 175,
                         *         "failure": 2
                         *       }
                         *     }
                         */
                        "application/json": {
                            /** @enum {string} */
                            object: "application_stats";
                            app_id: string;
                            /** Format: date-time */
                            since: string;
                            /** Format: date-time */
                            until: string;
                            /** @description The 20 event types (at most) with the most attempts in the window, most first (ties by name), with the window's counts */
                            event_types: {
                                /** @description An event type name */
                                event_type: string;
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                            }[];
                            /** @description The attempts of every other event type, summed */
                            other: {
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                            };
                            /** @description Every UTC hour the window touches, oldest first; counts are of attempts inside [since, until), all event types together and by type */
                            buckets: {
                                /** Format: date-time */
                                start: string;
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                                /** @description The named event types with attempts in this hour, in the order of the window's event_types */
                                event_types: {
                                    /** @description An event type name */
                                    event_type: string;
                                    /** @description Attempts answered 2xx */
                                    success: number;
                                    /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                    failure: number;
                                }[];
                                other: {
                                    /** @description Attempts answered 2xx */
                                    success: number;
                                    /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                    failure: number;
                                };
                            }[];
                            totals: {
                                /** @description Attempts answered 2xx */
                                success: number;
                                /** @description Attempts that failed (non-2xx answer, timeout, connection error) */
                                failure: number;
                            };
                        };
                    };
                };
                /** @description The request is not valid; the message names the field and the rule */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "invalid_request",
                         *         "message": "body must have required property 'app_id'",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The API key is missing, malformed, unknown or revoked */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "unauthorized",
                         *         "message": "Invalid or revoked API key",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description The key may not do this (send-test with a Live key) */
                403: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "test_mode_only",
                         *         "message": "send-test is only available with a Test key (sk_test_)",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Not found in the key's organization and environment */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "not_found",
                         *         "message": "application app_01jd5x3k8m2n4p6q8r0s2t4v6w not found",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
                /** @description Over the organization's rate limit; retry after Retry-After seconds */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        /**
                         * @example {
                         *       "error": {
                         *         "code": "rate_limited",
                         *         "message": "Too many requests",
                         *         "request_id": "req_01jd5x3k8m2n4p6q8r0s2t4v6w"
                         *       }
                         *     }
                         */
                        "application/json": {
                            error: {
                                code: string;
                                message: string;
                                request_id?: string;
                            };
                        };
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: never;
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
